package roomstate

import (
	"context"
	"time"

	"github.com/fairgate/fairgate/admission"
)

// Ledger is a room's admission.Ledger on a Store, shared by every node that
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

// Lookup implements admission.Ledger. A place the store's PlaceIndex
// says it holds no record of is answered without a store call.
func (l *Ledger) Lookup(ctx context.Context, id string) (admission.Place, error) {
	if !MayHoldPlace(l.store, l.room, id) {
		return admission.Place{}, nil
	}
	return l.store.LookupPlace(ctx, l.room, id, l.now())
}

// Hold implements admission.Ledger.
func (l *Ledger) Hold(ctx context.Context, id string, p admission.Place, until time.Time) (admission.Place, bool, error) {
	return l.store.HoldPlace(ctx, l.room, id, p, until, l.now())
}

// Use implements admission.Ledger.
func (l *Ledger) Use(ctx context.Context, id string, used admission.Place) (bool, error) {
	return l.store.UsePlace(ctx, l.room, id, used, l.now())
}

// Release implements admission.Ledger.
func (l *Ledger) Release(ctx context.Context, id string) error {
	return l.store.ReleasePlace(ctx, l.room, id)
}

var _ admission.Ledger = (*Ledger)(nil)
