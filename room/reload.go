package room

import (
	"fmt"
	"slices"
	"time"

	"github.com/fairgate/fairgate/admission"
)

// reconfigure applies what a new config changed. Every room setting a
// config holds is applied here, so each takes effect on a reload.
func (sh *Shared) reconfigure(s Settings, now time.Time) error {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	want := appliedOf(s)
	// The room's own order, not the applied one: a stored config (several
	// nodes) does not carry it.
	if err := checkOrderKept(want, applied{order: sh.Room.View(now).Order}); err != nil {
		return err
	}
	// Before the lanes: a new lane's shared budget is sized by them.
	changed := want.rate != sh.applied.rate || want.burst != sh.applied.burst || want.capacity != sh.applied.capacity
	if changed {
		sh.rate, sh.burst = want.rate, want.burst
		sh.setCapacityLocked(want.capacity)
	}
	if !slices.Equal(want.lanes, sh.applied.lanes) {
		// A new lane starts in the room's current state and difficulty; a
		// kept lane keeps its room untouched, and its places their grid.
		prev := sh.lanes()
		lanes, err := newLanes(s, prev, now)
		if err != nil {
			return fmt.Errorf("applying lanes: %w", err)
		}
		v := sh.Room.View(now)
		for _, l := range lanes {
			if slices.ContainsFunc(prev, func(p *lane) bool { return p.room == l.room }) {
				continue
			}
			if sh.cluster != nil {
				if err := sh.attachLane(l); err != nil {
					return fmt.Errorf("applying lanes: %w", err)
				}
			}
			if err := l.room.SetState(v.State, v.SaleStart, now); err != nil {
				return fmt.Errorf("applying lanes: %w", err)
			}
			if err := l.room.SetDifficulty(v.Difficulty); err != nil {
				return fmt.Errorf("applying lanes: %w", err)
			}
		}
		for _, p := range prev {
			if !slices.ContainsFunc(lanes, func(l *lane) bool { return l.room == p.room }) {
				sh.lapsedGone.Add(p.room.SlotsLapsed())
			}
		}
		sh.lanesNow.Store(&lanes)
	}
	if want.state != sh.applied.state || !want.saleStart.Equal(sh.applied.saleStart) {
		if err := sh.eachRoom(func(r *admission.Room) error { return r.SetState(want.state, want.saleStart, now) }); err != nil {
			return fmt.Errorf("applying state: %w", err)
		}
	}
	sh.active.SetWindow(s.activeWindow)
	if err := sh.rebalance(now, changed); err != nil {
		return fmt.Errorf("applying rate: %w", err)
	}
	if want.difficulty != sh.applied.difficulty {
		if err := sh.eachRoom(func(r *admission.Room) error { return r.SetDifficulty(want.difficulty) }); err != nil {
			return fmt.Errorf("applying difficulty: %w", err)
		}
	}
	if want.tau != sh.applied.tau || want.adaptive != sh.applied.adaptive {
		if err := sh.eachRoom(func(r *admission.Room) error { return r.SetTau(want.tau, want.adaptive, now) }); err != nil {
			return fmt.Errorf("applying tau: %w", err)
		}
	}
	if want.luck != sh.applied.luck {
		if err := sh.eachRoom(func(r *admission.Room) error { return r.SetLuck(want.luck) }); err != nil {
			return fmt.Errorf("applying luck_window: %w", err)
		}
	}
	if want.ledgerSize != sh.applied.ledgerSize {
		sh.memory.SetCapacity(want.ledgerSize)
	}
	sh.applied = want
	return nil
}
