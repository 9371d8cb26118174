package admission

import "time"

// Policy is how a gate treats waiting visitors. Zero fields take the
// defaults of DefaultPolicy.
type Policy struct {
	// TokenTTL is how long a waiting token lives past its next checkpoint.
	TokenTTL time.Duration
	// PlaceTTL is the longest a place in line lasts from its first token:
	// no version of the token is valid after it, and the ledger remembers
	// an admitted place until then (plus Leeway).
	PlaceTTL time.Duration
	// PassTTL is the session length a pass grants.
	PassTTL time.Duration
	// MinBackoff and MaxBackoff bound the time between checkpoints.
	MinBackoff, MaxBackoff time.Duration
	// BackoffShare is the share of the time already waited that the next
	// checkpoint lies ahead: early in the wait, when most draws come due,
	// checkpoints are close together; later they spread to MaxBackoff.
	BackoffShare float64
	// Leeway is the clock skew tolerated on token times.
	Leeway time.Duration
}

// DefaultPolicy is what zero Policy fields mean.
var DefaultPolicy = Policy{
	TokenTTL:     10 * time.Minute,
	PlaceTTL:     6 * time.Hour,
	PassTTL:      15 * time.Minute,
	MinBackoff:   2 * time.Second,
	MaxBackoff:   30 * time.Second,
	BackoffShare: 0.1,
	Leeway:       5 * time.Second,
}

func (p Policy) withDefaults() Policy {
	d := DefaultPolicy
	set := func(dst *time.Duration, v time.Duration) {
		if v > 0 {
			*dst = v
		}
	}
	set(&d.TokenTTL, p.TokenTTL)
	set(&d.PlaceTTL, p.PlaceTTL)
	set(&d.PassTTL, p.PassTTL)
	set(&d.MinBackoff, p.MinBackoff)
	set(&d.MaxBackoff, p.MaxBackoff)
	set(&d.Leeway, p.Leeway)
	if p.BackoffShare > 0 {
		d.BackoffShare = p.BackoffShare
	}
	if d.MaxBackoff < d.MinBackoff {
		d.MaxBackoff = d.MinBackoff
	}
	return d
}
