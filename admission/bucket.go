package admission

import (
	"math"
	"sync"
	"time"
)

// Bucket is a token bucket: it refills at Rate tokens per second up to Burst
// and caps how many visitors are admitted, whatever the clock says.
//
// It is not golang.org/x/time/rate's Limiter, though Reserve is the same
// idea: admissions need a fractional burst, a rate change that keeps the
// debt reservations ran up, and a refund after the reserved moment has
// passed (the admission hook refuses a visitor after their slot), which
// Reservation.CancelAt no longer gives back at that point.
type Bucket struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64 // negative while reservations are outstanding
	last   time.Time
}

// NewBucket returns a full bucket.
func NewBucket(rate, burst float64, now time.Time) *Bucket {
	return &Bucket{rate: rate, burst: burst, tokens: burst, last: now}
}

// Reserve takes one token, going into debt if there is none, and returns
// when the token is (or was) there: now if the bucket had one. Reservations
// are served in the order they are made, so whoever asks first, not most
// often, goes first.
func (b *Bucket) Reserve(now time.Time) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	b.tokens--
	if b.tokens >= 0 {
		return now
	}
	return now.Add(durationOf(-b.tokens / b.rate))
}

// Refund gives back a token a reservation took and did not use.
func (b *Bucket) Refund(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	b.tokens = math.Min(b.burst, b.tokens+1)
}

// Level is the number of tokens available at now (negative: the debt of
// reservations not yet due).
func (b *Bucket) Level(now time.Time) float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	return b.tokens
}

// SetRate changes the refill rate and burst from now on, keeping any debt.
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
