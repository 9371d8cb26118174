package admission

import (
	"slices"
	"sync"
	"time"
)

// rateWindow accumulates a quantity per second over a sliding window, to turn
// events into rates without remembering who caused them.
type rateWindow struct {
	mu      sync.Mutex
	seconds []float64
	epochs  []int64
}

// newRateWindow returns a window of the given length in whole seconds (at least 1).
func newRateWindow(length time.Duration) *rateWindow {
	n := int(length / time.Second)
	if n < 1 {
		n = 1
	}
	return &rateWindow{seconds: make([]float64, n), epochs: make([]int64, n)}
}

// add adds x to the second containing now.
func (w *rateWindow) add(now time.Time, x float64) {
	sec := now.Unix()
	i := int(sec % int64(len(w.seconds)))
	w.mu.Lock()
	if w.epochs[i] != sec {
		w.epochs[i], w.seconds[i] = sec, 0
	}
	w.seconds[i] += x
	w.mu.Unlock()
}

// rate is the sum over the complete seconds of the window ending before now,
// divided by the window's length: recentRate over the whole window.
func (w *rateWindow) rate(now time.Time) float64 {
	return w.recentRate(now, time.Duration(len(w.seconds))*time.Second)
}

// recentRate is the sum over the last complete seconds of the window
// ending before now, up to span (at least a second, at most the window),
// divided by those seconds: the same count as rate, over a shorter span.
func (w *rateWindow) recentRate(now time.Time, span time.Duration) float64 {
	cur := now.Unix()
	n := min(max(int64(span/time.Second), 1), int64(len(w.seconds)))
	w.mu.Lock()
	defer w.mu.Unlock()
	sum := 0.0
	for i, e := range w.epochs {
		if e < cur && e >= cur-n {
			sum += w.seconds[i]
		}
	}
	return sum / float64(n)
}

// presence counts the distinct places seen over a sliding span, in two
// generations: a place presented over and over counts once, so hammering
// cannot inflate the population and slow the clock for everyone. With each
// place it keeps the reading of the serving clock at which the place becomes
// eligible (its key), so the lottery clock can pass the keys of the places
// waiting at the rate (Room.Tick).
type presence struct {
	mu        sync.Mutex
	span      time.Duration
	start     time.Time
	cur, prev map[string]presentKey
}

// presentKey is a place's key as base + share·P, P the fifo pre-queue's
// size when the key is read: a pre-queue place's key (its draw times P)
// moves as the pre-queue grows until the start, so it is kept as its share,
// not as the key it had when last seen.
//
// due is when the place was last told to come (its answer's nxt, Unix
// nanoseconds; 0 while unknown): a fifo place that has not come by then and
// the network's spread has left or is asleep (keysFrom).
type presentKey struct {
	base, share float64
	due         int64
	// missed marks a place keysFrom found gone, counted once.
	missed bool
	// found marks a place found eligible: it holds a slot or was admitted
	// (markFound), so nothing it does moves it ahead of a later key.
	found bool
}

func (k presentKey) at(preQueue float64) float64 { return k.base + k.share*preQueue }

// newPresence returns a counter over span (at least a second). Every waiting
// visitor must present their place at least once a span for the count to
// see them: the span should exceed the longest backoff.
func newPresence(span time.Duration) *presence {
	return &presence{span: max(span, time.Second), cur: map[string]presentKey{}, prev: map[string]presentKey{}}
}

// seeKey records place as present at now, with its key.
func (p *presence) seeKey(now time.Time, place string, key float64) {
	p.see(now, place, presentKey{base: key})
}

// seePreQueue records a fifo pre-queue place as present at now, with its
// draw: its key is from plus the draw times the pre-queue's size.
func (p *presence) seePreQueue(now time.Time, place string, from, draw float64) {
	p.see(now, place, presentKey{base: from, share: draw})
}

func (p *presence) see(now time.Time, place string, key presentKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rotate(now)
	p.cur[place] = key
}

// setDue records when place was told to come next, if it is counted.
func (p *presence) setDue(place string, due time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range []map[string]presentKey{p.cur, p.prev} {
		if k, ok := m[place]; ok {
			k.due = due.UnixNano()
			m[place] = k
			return
		}
	}
}

// markFound records that place was found eligible, if it is counted.
func (p *presence) markFound(place string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range []map[string]presentKey{p.cur, p.prev} {
		if k, ok := m[place]; ok {
			k.found = true
			m[place] = k
			return
		}
	}
}

// keySplit is the places seen over the last two spans, split at a clock
// reading (presence.keysFrom).
type keySplit struct {
	// passed is how many have a key at or below the reading (eligible,
	// not yet admitted) and are expected to come; unfound how many of
	// those were not found eligible yet.
	passed, unfound int
	// ahead is the keys above the reading, sorted.
	ahead []float64
	// newlyMissed is how many places were found gone for the first time.
	newlyMissed int
}

// keysFrom splits the places seen over the last two spans at the clock
// reading s. Passed places count only if told to come at or after missed
// (one that did not come when told is gone, and newlyMissed counts those
// found so for the first time) or, their moment unknown, if their keys
// lie above from (the clock passed them since it read from); they count
// as unfound only while their keys lie above from, so a place told a
// moment far past its key holds nothing back for long. preQueue is the
// fifo pre-queue's size.
func (p *presence) keysFrom(now time.Time, from, s, preQueue float64, missed time.Time) keySplit {
	p.mu.Lock()
	p.rotate(now)
	split := keySplit{ahead: make([]float64, 0, len(p.cur)+len(p.prev))}
	gone := missed.UnixNano()
	add := func(m map[string]presentKey, place string, k presentKey) {
		switch key := k.at(preQueue); {
		case key > s:
			split.ahead = append(split.ahead, key)
		case k.due == 0 && key > from, k.due >= gone:
			split.passed++
			if !k.found && key > from {
				split.unfound++
			}
		case k.due != 0 && !k.missed:
			k.missed = true
			m[place] = k
			split.newlyMissed++
		}
	}
	for place, key := range p.cur {
		add(p.cur, place, key)
	}
	for place, key := range p.prev {
		if _, dup := p.cur[place]; !dup {
			add(p.prev, place, key)
		}
	}
	p.mu.Unlock()
	slices.Sort(split.ahead)
	return split
}

// forget removes place from the count: it was admitted and waits no more.
// It reports whether the place was counted.
func (p *presence) forget(place string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, cur := p.cur[place]
	_, prev := p.prev[place]
	delete(p.cur, place)
	delete(p.prev, place)
	return cur || prev
}

// count is the number of distinct places seen in the last complete span, or
// in the current one if it already saw more.
func (p *presence) count(now time.Time) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rotate(now)
	return float64(max(len(p.cur), len(p.prev)))
}

func (p *presence) rotate(now time.Time) {
	if p.start.IsZero() {
		p.start = now
	}
	if now.Before(p.start.Add(p.span)) {
		return
	}
	if now.Before(p.start.Add(2 * p.span)) {
		p.prev = p.cur
	} else {
		p.prev = map[string]presentKey{}
	}
	p.cur = make(map[string]presentKey, len(p.prev))
	p.start = now
}
