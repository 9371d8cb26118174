package roomstate_test

import (
	"math"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission/roomstate"
)

// A window's limit is not rounded up: over consecutive windows the limits
// add up to the rate times the time (within one admission), whatever the
// rate's fraction. Rounding gave a rate of 2.5 a limit of 3 a second.
func TestBudgetWindowsAddUpToTheRate(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	for _, rate := range []float64{0.7, 1.5, 2.5, 10.5, 33.3, 500} {
		length := roomstate.WindowFor(rate, rate)
		b, err := roomstate.NewBudget(nil, "r", 1, length)
		if err != nil {
			t.Fatal(err)
		}
		const windows = 1000
		var sum int64
		for i := range windows {
			w := b.WindowAt(start.Add(time.Duration(i)*length), rate)
			if per := rate * length.Seconds(); float64(w.Limit) < math.Floor(per) || float64(w.Limit) > math.Ceil(per) {
				t.Fatalf("rate %v: window %d limit %d, want %v rounded either way", rate, w.Index, w.Limit, per)
			}
			sum += w.Limit
		}
		if want := rate * length.Seconds() * windows; math.Abs(float64(sum)-want) > 1 {
			t.Errorf("rate %v: %d windows of %v admit %d, want %.0f (±1)", rate, windows, length, sum, want)
		}
	}
}
