package roomstate

import (
	"context"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
)

// Ledger is a room's queue.Ledger on a Store, shared by every node that
// uses the same store.
type Ledger struct {
	store Store
	room  string
	now   func() time.Time
}

// NewLedger returns room's place ledger on store; now judges expiry.
func NewLedger(store Store, room string, now func() time.Time) *Ledger {
	return &Ledger{store: store, room: room, now: now}
}

// Lookup implements queue.Ledger. A place the store's PlaceIndex
// says it holds no record of is answered without a store call.
func (l *Ledger) Lookup(ctx context.Context, id string) (queue.Place, error) {
	if !MayHoldPlace(l.store, l.room, id) {
		return queue.Place{}, nil
	}
	return l.store.LookupPlace(ctx, l.room, id, l.now())
}

// Hold implements queue.Ledger.
func (l *Ledger) Hold(ctx context.Context, id string, p queue.Place, until time.Time) (queue.Place, bool, error) {
	return l.store.HoldPlace(ctx, l.room, id, p, until, l.now())
}

// Use implements queue.Ledger.
func (l *Ledger) Use(ctx context.Context, id string, used queue.Place) (bool, error) {
	return l.store.UsePlace(ctx, l.room, id, used, l.now())
}

// Release implements queue.Ledger.
func (l *Ledger) Release(ctx context.Context, id string) error {
	return l.store.ReleasePlace(ctx, l.room, id)
}

// Lapse implements queue.Ledger.
func (l *Ledger) Lapse(ctx context.Context, id string, slot time.Time) (bool, error) {
	return l.store.LapsePlace(ctx, l.room, id, slot, l.now())
}

var _ queue.Ledger = (*Ledger)(nil)
