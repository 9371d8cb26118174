package admission

import (
	"math"
	"sync"
	"time"
)

// Bucket is a token bucket: it refills at Rate tokens per second up to Burst
// and caps how many visitors are admitted, whatever the clock says.
type Bucket struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

// NewBucket returns a full bucket.
func NewBucket(rate, burst float64, now time.Time) *Bucket {
	return &Bucket{rate: rate, burst: burst, tokens: burst, last: now}
}

// Take removes one token if there is one.
func (b *Bucket) Take(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// Level is the number of tokens available at now.
func (b *Bucket) Level(now time.Time) float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	return b.tokens
}

// Empty reports whether Take would fail at now, and how long until it would not.
func (b *Bucket) Empty(now time.Time) (empty bool, refill time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	if b.tokens >= 1 {
		return false, 0
	}
	if b.rate <= 0 {
		return true, time.Duration(math.MaxInt64)
	}
	return true, durationOf((1 - b.tokens) / b.rate)
}

// SetRate changes the refill rate and burst from now on.
func (b *Bucket) SetRate(rate, burst float64, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	b.rate, b.burst = rate, burst
	b.tokens = math.Min(b.tokens, burst)
}

func (b *Bucket) refill(now time.Time) {
	if now.After(b.last) {
		b.tokens = math.Min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
	}
}

// Burst is the most tokens the bucket holds.
func (b *Bucket) Burst() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.burst
}
