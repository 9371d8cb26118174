package queue

import (
	"math"
	"time"
)

// Segment is one piece of the serving clock: from Start on, the clock advances
// at Speed units per second (Speed = 1/tau; 0 means frozen).
type Segment struct {
	Start time.Time `json:"start"`
	Speed float64   `json:"speed"`
}

// Clock is the serving clock S(t): a value at an origin time and a sorted list
// of segments after it. It is an immutable value; the same Clock gives the
// same S(t) on every node, which is what lets nodes share one queue.
//
// Before the first segment, and between Origin and it, the clock stands still.
type Clock struct {
	// Origin is when the clock read Value.
	Origin time.Time `json:"origin"`
	// Value is S(Origin).
	Value float64 `json:"value"`
	// Segments are sorted by Start, none before Origin.
	Segments []Segment `json:"segments,omitempty"`
}

// At is S(t). Times before Origin read Value: the clock never runs backwards.
func (c Clock) At(t time.Time) float64 {
	s := c.Value
	for i, seg := range c.Segments {
		if !t.After(seg.Start) {
			break
		}
		end := t
		if i+1 < len(c.Segments) && c.Segments[i+1].Start.Before(t) {
			end = c.Segments[i+1].Start
		}
		s += seg.Speed * end.Sub(seg.Start).Seconds()
	}
	return s
}

// SpeedAt is the clock's speed at t.
func (c Clock) SpeedAt(t time.Time) float64 {
	speed := 0.0
	for _, seg := range c.Segments {
		if seg.Start.After(t) {
			break
		}
		speed = seg.Speed
	}
	return speed
}

// From returns a clock that agrees with c up to t and runs at speed after
// it. Segments c had planned after t are dropped. Past segments are folded
// into the origin, so a clock never grows beyond the plans still ahead.
func (c Clock) From(t time.Time, speed float64) Clock {
	if t.Before(c.Origin) {
		t = c.Origin
	}
	return Clock{Origin: t, Value: c.At(t), Segments: []Segment{{Start: t, Speed: speed}}}
}

// Plan returns a clock that agrees with c up to at and runs at speed
// after it, its origin moved up to now (at is not before now; the
// segments c had planned between them stay): a change that takes effect
// later than it is made, so every node sharing the clock has learnt it
// before it counts. Plan(t, t, speed) is From(t, speed).
func (c Clock) Plan(now, at time.Time, speed float64) Clock {
	if now.Before(c.Origin) {
		now = c.Origin
	}
	if at.Before(now) {
		at = now
	}
	out := Clock{Origin: now, Value: c.At(now), Segments: []Segment{{Start: now, Speed: c.SpeedAt(now)}}}
	for _, seg := range c.Segments {
		if seg.Start.After(now) {
			out.Segments = append(out.Segments, seg)
		}
	}
	return out.Then(at, speed)
}

// Until is c as a reading that holds until t, when the next one begins:
// the segments it planned from t on are never read, and dropped.
func (c Clock) Until(t time.Time) Clock {
	segs := make([]Segment, 0, len(c.Segments))
	for _, seg := range c.Segments {
		if seg.Start.Before(t) {
			segs = append(segs, seg)
		}
	}
	c.Segments = segs
	return c
}

// Then appends a segment starting at t (which must not be before the last
// segment) and returns the new clock.
func (c Clock) Then(t time.Time, speed float64) Clock {
	segs := make([]Segment, 0, len(c.Segments)+1)
	for _, seg := range c.Segments {
		if seg.Start.Before(t) {
			segs = append(segs, seg)
		}
	}
	c.Segments = append(segs, Segment{Start: t, Speed: speed})
	return c
}

// When returns the first time at or after from when the clock reads at least
// target, assuming the segments as they stand; ok is false if it never does.
func (c Clock) When(from time.Time, target float64) (when time.Time, ok bool) {
	s := c.At(from)
	if s >= target {
		return from, true
	}
	t := from
	for i, seg := range c.Segments {
		var end time.Time
		last := i+1 == len(c.Segments)
		if !last {
			end = c.Segments[i+1].Start
			if !end.After(t) {
				continue
			}
		}
		start := t
		if seg.Start.After(start) {
			start = seg.Start
		}
		if seg.Speed > 0 {
			need := (target - s) / seg.Speed
			reach := start.Add(durationOf(need))
			if last || !reach.After(end) {
				return reach, true
			}
		}
		if last {
			return time.Time{}, false
		}
		s += seg.Speed * end.Sub(start).Seconds()
		t = end
	}
	return time.Time{}, false
}

// durationOf converts seconds to a Duration, saturating rather than overflowing.
func durationOf(seconds float64) time.Duration {
	const maxSeconds = float64(math.MaxInt64 / int64(time.Second))
	if seconds >= maxSeconds {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(seconds * float64(time.Second))
}
