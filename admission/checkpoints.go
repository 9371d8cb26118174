package admission

import (
	"math"
	"time"

	"github.com/fairgate/fairgate/admission/tokens"
)

// checkpoints is one draw's grid of checkpoints in a room. Point n lies at
// Opens + F(n + phase): F grows geometrically from MinBackoff apart, by
// BackoffShare of the time since Opens, until points are MaxBackoff apart,
// then linearly. The phase is a keyed hash of the lottery ticket, so the
// grid depends on the draw and the room alone: every version of a token,
// and every token of one identity (which share a draw), name the same
// checkpoints, whenever they are judged; and draws spread evenly over time.
type checkpoints struct {
	gridShape
	origin time.Time
	phase  float64
}

// gridShape is what a grid's points are fixed by besides the draw and the
// room, worked out once by NewGate: a judged poll computes about six points.
type gridShape struct {
	min, max, mul float64 // seconds; mul is 1 + BackoffShare
	logMul        float64 // ln(mul)
	knee          float64 // the index where spacing reaches max
	kneeOffset    float64 // F(knee)
	// first is the grid's first index: -1 puts one point in the
	// MinBackoff/mul before the origin, 0 none.
	first int64
}

func newGridShape(minBackoff, maxBackoff time.Duration, share float64) gridShape {
	s := gridShape{min: minBackoff.Seconds(), max: maxBackoff.Seconds(), mul: 1 + share}
	s.logMul = math.Log(s.mul)
	s.knee = math.Log(s.max/s.min) / s.logMul
	s.kneeOffset = s.geometric(s.knee)
	return s
}

// withPointBeforeOrigin is the shape with point -1, in the last
// MinBackoff/mul before the origin (F extends below zero). A lottery
// room's pre-queue is judged there once before the sale starts, so the
// room knows its keys when the clock starts (Room.tickLottery) and admits
// from the start's first moment; nothing is admitted there (walk: never
// eligible before Opens).
func (s gridShape) withPointBeforeOrigin() gridShape {
	s.first = -1
	return s
}

// geometric is F(x) before the knee: min·(mul^x − 1)/(mul − 1), with
// mul^x − 1 as expm1(x·ln mul), which costs a fifth of math.Pow.
func (s gridShape) geometric(x float64) float64 {
	return s.min * math.Expm1(x*s.logMul) / (s.mul - 1)
}

func (g *Gate) grid(view *View, lot string) checkpoints {
	return g.gridOf(view, g.codec.Keys().Draw(lot).Phase)
}

// gridOf is the grid of a draw whose phase is known.
func (g *Gate) gridOf(view *View, phase float64) checkpoints {
	shape := g.lotteryGrid
	if view.Order == OrderFIFO {
		shape = g.fifoGrid
	}
	return checkpoints{gridShape: shape, origin: view.Opens, phase: phase}
}

// offset is F(x) in seconds.
func (c checkpoints) offset(x float64) float64 {
	if x <= c.knee {
		return c.geometric(x)
	}
	return c.kneeOffset + c.max*(x-c.knee)
}

// inverse is F⁻¹(seconds).
func (c checkpoints) inverse(sec float64) float64 {
	if sec > c.kneeOffset {
		return c.knee + (sec-c.kneeOffset)/c.max
	}
	return math.Log1p(sec*(c.mul-1)/c.min) / c.logMul
}

// at is point n, in whole milliseconds as nxt carries it.
func (c checkpoints) at(n int64) time.Time {
	sec := c.offset(float64(n) + c.phase)
	return time.UnixMilli(c.origin.Add(durationOf(sec)).UnixMilli())
}

// after is the index of the first point strictly after t.
func (c checkpoints) after(t time.Time) int64 {
	if t.Before(c.origin) && (c.first == 0 || t.Before(c.at(c.first))) {
		return c.first
	}
	n := max(c.first, int64(math.Floor(c.inverse(t.Sub(c.origin).Seconds())-c.phase))+1)
	for n > c.first && c.at(n-1).After(t) { // rounding to milliseconds
		n--
	}
	for !c.at(n).After(t) {
		n++
	}
	return n
}

// index is the index of point t, or of the first point after it if t is
// not one (a token from before the grid moved).
func (c checkpoints) index(t time.Time) int64 {
	return c.after(t.Add(-time.Millisecond))
}

// ceilMilli rounds a slot's due time up to nxt's millisecond, so a token
// presented at its nxt is never before its slot.
func ceilMilli(t time.Time) time.Time {
	c := time.UnixMilli(t.UnixMilli())
	if c.Before(t) {
		c = c.Add(time.Millisecond)
	}
	return c
}

// recheck is when a place that is eligible but cannot be admitted now (the
// room is paused, or the hook refused it) asks again: its next checkpoint;
// in a fifo room, whose grid is fine, the first point a backoff ahead (the
// longest while paused).
func (g *Gate) recheck(view *View, claims *tokens.WaitClaims, now time.Time) time.Time {
	if view.Order != OrderFIFO {
		return g.nextCheckpoint(view, claims, now)
	}
	wait := g.policy.MinBackoff
	if view.State == StatePaused {
		wait = g.policy.MaxBackoff
	}
	return g.pointFrom(view, claims, now.Add(wait), now)
}

// nextCheckpoint is the first checkpoint after at on the draw's grid.
func (g *Gate) nextCheckpoint(view *View, claims *tokens.WaitClaims, at time.Time) time.Time {
	grid := g.grid(view, claims.Lot)
	return grid.at(grid.after(at))
}

// durationOf converts seconds to a Duration, saturating rather than overflowing.
func durationOf(seconds float64) time.Duration {
	const maxSeconds = float64(math.MaxInt64 / int64(time.Second))
	if seconds >= maxSeconds {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(seconds * float64(time.Second))
}
