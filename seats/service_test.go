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

// seatReads counts a real store's seat reads, page by page.
type seatReads struct {
	seats.Store
	pages, seats atomic.Int64
}

func (s *seatReads) SeatPage(ctx context.Context, event, section, after string, limit int) ([]seats.Seat, string, error) {
	page, next, err := s.Store.SeatPage(ctx, event, section, after, limit)
	s.pages.Add(1)
	s.seats.Add(int64(len(page)))
	return page, next, err
}

// TestBestReadsBounded: best available reads pages of SeatPageSize and at
// most MaxBestScan seats, then answers taken, however many seats the event
// has; a fit found early reads one page.
func TestBestReadsBounded(t *testing.T) {
	bolt, err := boltstore.Open(filepath.Join(t.TempDir(), "seats.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bolt.Close()
	store := &seatReads{Store: bolt}
	now := storetest.T0
	svc := seats.NewService(store, func() time.Time { return now })
	ctx := context.Background()
	// Rows of 21: no run of 20 fits without leaving a lone seat.
	ev := seats.Event{ID: "big", Name: "big", MaxSeats: seats.MaxSeatsPerHold}
	for s := range 4 {
		blk := seats.Block{ID: "1"}
		for r := range seats.MaxRowsPerSection {
			row := seats.Row{ID: fmt.Sprint(r + 1)}
			for n := 1; n <= 21; n++ {
				row.Seats = append(row.Seats, seats.SeatSpec{Number: n})
			}
			blk.Rows = append(blk.Rows, row)
		}
		ev.Sections = append(ev.Sections, seats.Section{ID: fmt.Sprint("S", s), Name: "S", Price: 100, Blocks: []seats.Block{blk}})
	}
	if _, err := svc.CreateEvent(ctx, ev); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		count       int
		taken       bool
		pages, read int64
	}{
		// Sections of 4,200 seats: the first two end in a short page.
		{count: 20, taken: true, pages: seats.MaxBestScan/seats.SeatPageSize + 2, read: seats.MaxBestScan},
		{count: 19, pages: 1, read: seats.SeatPageSize},
	} {
		store.pages.Store(0)
		store.seats.Store(0)
		user := fmt.Sprint("u", c.count)
		sess, err := svc.OpenSession(ctx, "big", user, "", now, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = svc.HoldBest(ctx, sess.ID, user, c.count, nil, now, nil)
		var taken *seats.TakenError
		if errors.As(err, &taken) != c.taken || (!c.taken && err != nil) {
			t.Fatalf("best %d: %v, want taken %v", c.count, err, c.taken)
		}
		if p, n := store.pages.Load(), store.seats.Load(); p != c.pages || n != c.read {
			t.Fatalf("best %d read %d seats in %d pages, want %d in %d", c.count, n, p, c.read, c.pages)
		}
	}
}
