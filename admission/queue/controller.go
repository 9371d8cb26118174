package queue

import (
	"math"
)

// Controller sets the serving clock's speed so that the expected rate of
// visitors becoming eligible matches the target admission rate.
//
// Every waiting visitor's remaining threshold is an exponential draw with mean
// 1 clock unit (memorylessness), so at speed s a population of N visitors
// produces about N*s eligible visitors per second: the speed that meets a
// target rate R is R/N. N is the number of distinct places presented over
// the window (admission.Room.ObservePresent). The observed eligible rate then
// corrects for what the estimate misses, and slew limits keep any change from
// releasing a flood.
type Controller struct {
	// MinSpeed and MaxSpeed bound the speed (clock units per second).
	MinSpeed, MaxSpeed float64
	// MaxRise and MaxFall are the largest relative change per update: a
	// speed may become at most (1+MaxRise) times, and at least (1-MaxFall)
	// times, what it was.
	MaxRise, MaxFall float64
}

// DefaultController rises by at most 25% and falls by at most 50% a step,
// between tau = 1 s and tau = 1 day.
var DefaultController = Controller{MinSpeed: 1.0 / 86400, MaxSpeed: 1, MaxRise: 0.25, MaxFall: 0.5}

// Next returns the speed to run at, given the current speed, the target
// admissions per second, the estimated waiting population and the observed
// rate of eligible attempts. Unknown inputs (zero) leave their part out.
func (c Controller) Next(current, target, population, eligible float64) float64 {
	want := current
	if population >= 1 && target > 0 {
		want = target / population
	}
	if eligible > 0 && target > 0 {
		// A square root damps the feedback so the two estimates do not fight.
		want *= math.Sqrt(clamp(target/eligible, 0.5, 2))
	}
	if current > 0 {
		want = clamp(want, current*(1-c.MaxFall), current*(1+c.MaxRise))
	}
	return clamp(want, c.MinSpeed, c.MaxSpeed)
}

func clamp(x, lo, hi float64) float64 {
	return math.Max(lo, math.Min(hi, x))
}
