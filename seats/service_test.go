package seats_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairgate/fairgate/seats"
	"github.com/fairgate/fairgate/seats/boltstore"
	"github.com/fairgate/fairgate/seats/storetest"
)

// eventReads counts a real store's Event reads.
type eventReads struct {
	seats.Store
	n atomic.Int64
}

func (s *eventReads) Event(ctx context.Context, id string) (seats.Event, error) {
	s.n.Add(1)
	return s.Store.Event(ctx, id)
}

// TestEventCache: the service reads an event from its store once, however
// many sessions and checkouts need it, and keeps looking up one that is not
// there yet until it is.
func TestEventCache(t *testing.T) {
	bolt, err := boltstore.Open(filepath.Join(t.TempDir(), "seats.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bolt.Close()
	store := &eventReads{Store: bolt}
	now := storetest.T0
	svc := seats.NewService(store, func() time.Time { return now })
	ctx := context.Background()
	for i := range 2 {
		if _, err := svc.OpenSession(ctx, "ev", fmt.Sprint("early", i), "", now, nil); !errors.Is(err, seats.ErrNotFound) {
			t.Fatalf("session for an event not yet imported: %v", err)
		}
	}
	if got := store.n.Load(); got != 2 {
		t.Fatalf("%d event reads for two lookups of a missing event, want 2", got)
	}
	if _, err := svc.CreateEvent(ctx, storetest.Event("ev")); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		user := fmt.Sprint("u", i)
		sess, err := svc.OpenSession(ctx, "ev", user, "", now, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.HoldSeats(ctx, sess.ID, user, []string{seats.SeatID("A", "1", "1", i+1)}, now, nil); err != nil {
			t.Fatal(err)
		}
		got, err := svc.Checkout(ctx, sess.ID, user, now, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := seats.CheckoutDeadline(sess, now, storetest.Event("ev").CheckoutWindow.Or(0)); !got.CheckoutUntil.Equal(want) {
			t.Fatalf("checkout until %v, want %v: the cached event's window was not applied", got.CheckoutUntil, want)
		}
	}
	if got := store.n.Load(); got != 3 {
		t.Fatalf("%d event reads after the import and five sessions with checkouts, want 3", got)
	}
}
