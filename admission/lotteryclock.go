package admission

import (
	"math"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
)

// lotteryTick is the period tickLottery plans for: Room.Tick runs about
// once a second.
const lotteryTick = time.Second

// lotteryStartRamp is how long a scheduled lottery room's clock takes to
// pass the lead at the sale start (Room.publish).
const lotteryStartRamp = 100 * time.Millisecond

// tickLottery is the speed of a lottery room's adaptive clock for the next
// second.
//
// The room knows the key of every place presented to it over the last
// window: the clock reading at which it becomes eligible (entry srv plus
// its threshold, presence.keysFrom). The clock is set to pass the keys of the
// places waiting at the rate, the way fifo's counter passes ranks, instead
// of at a speed guessed from a population count: that guess counts the
// places already eligible but not yet judged as if they were still ahead
// (the clock then runs too slow as the queue drains), and the Poisson
// noise of eligibility at R/N is a tenth of the rate over 10 s. A node
// sharing the room with others sees its own share of the keys: population
// is the room's, over every node, and the keys this node sees stand for
// population over their number each (a node's visitors are a sample of
// the room's draws); the places passed and not admitted are every node's,
// summed (NoteRoomPassed), when nodes publish them. Where places wait at
// other nodes and this node's keys are too few to stand for them (fewer
// than two would cover what the lead lacks, or none is ahead), the clock
// passes what the lead lacks where the room's keys are expected instead
// (expectedPassing).
//
// A place is judged only at its checkpoints, up to one spacing apart, so
// an admission follows the passing of its key by up to that spacing. To
// admit at the rate to the last place, the clock keeps the places passed
// and not yet admitted that are expected to come (slot holders included;
// Room.passedKeys, which leaves out those that walked away) at the
// admissions of a spacing and a second (the lead): each second it passes as many keys as
// they fall short of it, none while they exceed it. Where the keys lie thin
// (the end of the queue) it runs faster, where they crowd slower, so it
// releases the lead and no more from the keys it knows; a place not seen
// yet (its first checkpoint still ahead) may become eligible with them, and
// then waits for a slot in the order found. Without any key ahead, and
// none known to wait at other nodes, it falls back to the controller
// (queue.Controller.Next on the population and the eligible rate).
//
// Nothing here depends on which places ask when: keys are counted once per
// place, whatever it presents, and a place counts only once it presented a
// solved attempt at a checkpoint. The order stays the threshold order; only
// the clock's speed — room control — is set from the keys.
//
// pace is the speed the wait estimate reads (View.Pace): the rate over the
// places ahead, the speed at which a place's mean wait passes if they
// drain at the rate; zero when no key is known ahead.
func (r *Room) tickLottery(v *View, now time.Time, population, eligible float64) (speed, pace float64) {
	// The last tick before a sale start sets the speed the clock runs at
	// from the start, so the first places pass at the start, not a tick
	// after it.
	running := v.State == StateQueue || (v.State == StateScheduled && !now.Add(lotteryTick).Before(v.SaleStart))
	if !running {
		return v.Cruise, v.Pace // the clock stands still; its speed waits for the start
	}
	// The speed runs from at (Room.speedFrom): the keys passed by then
	// count as passed, and the lead covers the admissions until a tick's
	// speed takes effect.
	s := v.Clock.At(r.speedFrom(v, now))
	passed, _, ahead := r.passedKeys(v, math.Inf(-1), s, now)
	local := r.presence.count(now)
	scale := 1.0
	if local > 0 && population > local {
		scale = population / local
	}
	// At least one place in hand, so a room admitting less than one a
	// spacing still moves (the bucket then holds its rate).
	lead := math.Max(1, v.Rate*(lotteryTick+r.delay()+r.policy.spacing(now.Sub(v.Opens))).Seconds())
	// The room's passed places: every node's sum when nodes publish it
	// (a tick more of lead then, as a node's view lags the ticking node's
	// by up to a poll), else this node's, standing for population over
	// its own count.
	roomPassed := passed * scale
	sum, _, several := r.roomPassedNow(now)
	if several {
		roomPassed = sum
		lead += v.Rate * lotteryTick.Seconds()
	}
	short := lead - roomPassed
	// When places wait at other nodes and few or none of the room's are
	// here, this node's keys are too coarse to stand for what the lead
	// lacks: each stands for scale places, a sample of the room's draws,
	// so passing one passes anywhere from none to many of them (fifo's
	// ranks, dense and known, need no such margin), and passing none the
	// clock would wait for admissions that come only once it passes more.
	// It passes keys where the room's are expected then (expectedPassing).
	// Not before the start: the tick before it sees only the part of the
	// pre-queue that has presented at its last checkpoint.
	waiting := population - roomPassed
	elsewhere := population > local && short >= 1 && waiting >= 1 && !now.Before(v.SaleStart)
	if len(ahead) == 0 {
		if several && elsewhere {
			return expectedPassing(short, waiting, r.controller), 0
		}
		return r.controller.Next(v.Cruise, v.Rate, population, eligible), 0
	}
	pace = clamp(v.Rate/(float64(len(ahead))*scale), r.controller.MinSpeed, r.controller.MaxSpeed)
	if elsewhere && math.Round(short/scale) < 2 {
		return expectedPassing(short, waiting, r.controller), pace
	}
	speed = r.controller.MinSpeed
	if want := math.Round(short / scale); want >= 1 {
		k := min(int(want), len(ahead))
		// Just past the k-th key: the clock reads it before the second ends.
		speed = (ahead[k-1] - s) / lotteryTick.Seconds() * (1 + 1e-9)
	}
	return clamp(speed, r.controller.MinSpeed, r.controller.MaxSpeed), pace
}

// expectedPassing is the clock speed that passes, over the next second,
// the keys of short of the waiting places not yet passed, where they are
// expected: a place not passed has a threshold of mean one clock unit
// left whatever it waited (memorylessness), so a clock moving x passes
// 1 − e^(−x) of them.
func expectedPassing(short, waiting float64, c queue.Controller) float64 {
	share := min(short/waiting, 1)
	return clamp(-math.Log1p(-share)/lotteryTick.Seconds(), c.MinSpeed, c.MaxSpeed)
}

// spacing is the time between a draw's checkpoints at since after the
// grid's origin: MinBackoff plus BackoffShare of since, at most MaxBackoff
// (the slope of the grid, Gate.grid).
func (p Policy) spacing(since time.Duration) time.Duration {
	d := p.MinBackoff + time.Duration(p.BackoffShare*float64(max(since, 0)))
	return min(d, p.MaxBackoff)
}
