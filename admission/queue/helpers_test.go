package queue

import "time"

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
