package roomstate

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
)

// Backlog holds the places a FallbackLedger recorded in memory while the
// store failed (on_unavailable local), until WriteBack has written them to
// the store: then the other nodes, and this one after a restart, find them
// used. What stays possible is the outage itself: until the write-back, a
// place used here is unknown elsewhere and may be admitted once more on
// another node (WriteBack counts those it finds).
type Backlog struct {
	mu     sync.Mutex
	places map[string]pending
}

type pending struct {
	place queue.Place
	until time.Time
}

// NewBacklog returns an empty backlog.
func NewBacklog() *Backlog { return &Backlog{places: map[string]pending{}} }

// add records place id as held in memory until the given time.
func (b *Backlog) add(id string, p queue.Place, until time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.places[id] = pending{place: p, until: until}
}

// use records a place held in memory as used now.
func (b *Backlog) use(id string, p queue.Place) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur, ok := b.places[id]
	if !ok {
		return
	}
	p.State, p.Slot, p.Charged = queue.PlaceUsed, time.Time{}, time.Time{}
	cur.place = p
	b.places[id] = cur
}

// lapse forgets a place reserved in memory whose slot lapsed: there is
// nothing to write back.
func (b *Backlog) lapse(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if cur, ok := b.places[id]; ok && cur.place.State == queue.PlaceReserved {
		delete(b.places, id)
	}
}

// Len is the number of places waiting to be written.
func (b *Backlog) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.places)
}

// WriteBack writes the used places of the backlog to the store: a place
// with no record there is held as used; one reserved there (before the
// outage) is used. It stops at the first store error (the store is still
// failing: the rest waits for the next call). It returns how many were
// written and how many the store already had as used by another admission
// (admitted twice: once here from memory, once elsewhere). A place still
// reserved in memory waits until it is used or expires.
func (b *Backlog) WriteBack(ctx context.Context, store Store, room string, now time.Time) (written, twice int, err error) {
	b.mu.Lock()
	todo := make(map[string]pending, len(b.places))
	for id, p := range b.places {
		switch {
		case !now.Before(p.until):
			delete(b.places, id) // expired: nobody can present it any more
		case p.place.State == queue.PlaceUsed:
			todo[id] = p
		}
	}
	b.mu.Unlock()
	for id, p := range todo {
		held, won, err := store.HoldPlace(ctx, room, id, p.place, p.until, now)
		if err != nil {
			return written, twice, fmt.Errorf("writing back place %s: %w", id, err)
		}
		switch {
		case won:
			written++
		case held.State == queue.PlaceReserved:
			ok, err := store.UsePlace(ctx, room, id, p.place, now)
			if err != nil {
				return written, twice, fmt.Errorf("writing back place %s: %w", id, err)
			}
			if ok {
				written++
			} else {
				twice++
			}
		case held.State == queue.PlaceUsed && (held.By != p.place.By || held.By == ""):
			twice++
		default:
			written++ // this very admission, written before
		}
		b.mu.Lock()
		if cur, ok := b.places[id]; ok && cur.place == p.place {
			delete(b.places, id)
		}
		b.mu.Unlock()
	}
	return written, twice, nil
}
