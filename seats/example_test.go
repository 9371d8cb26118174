package seats_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fairgate/fairgate/seats"
	"github.com/fairgate/fairgate/seats/boltstore"
)

// A seat service over the embedded store: an event of one row, two
// admitted visitors after the same seat. The first hold wins; the second is
// told which seat was taken; the winner checks out and confirms.
func Example() {
	dir, err := os.MkdirTemp("", "seats-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := boltstore.Open(filepath.Join(dir, "seats.db"))
	if err != nil {
		panic(err)
	}
	defer store.Close()
	ctx := context.Background()
	now := time.Date(2031, 3, 9, 12, 0, 0, 0, time.UTC)
	svc := seats.NewService(store, func() time.Time { return now })

	row := seats.Row{ID: "1"}
	for n := 1; n <= 6; n++ {
		row.Seats = append(row.Seats, seats.SeatSpec{Number: n})
	}
	ev, err := svc.CreateEvent(ctx, seats.Event{
		ID: "final", Name: "Final", MaxSeats: 2,
		HoldWindow: seats.Duration(10 * time.Minute), CheckoutWindow: seats.Duration(5 * time.Minute),
		Sections: []seats.Section{{ID: "A", Name: "A", Price: 5000, Blocks: []seats.Block{{ID: "1", Rows: []seats.Row{row}}}}},
	})
	if err != nil {
		panic(err)
	}
	// Each session is opened with the waiting token its pass came from.
	alice, err := svc.OpenSession(ctx, ev.ID, "alice", "wid-alice", now, nil)
	if err != nil {
		panic(err)
	}
	bob, err := svc.OpenSession(ctx, ev.ID, "bob", "wid-bob", now, nil)
	if err != nil {
		panic(err)
	}
	held, err := svc.HoldSeats(ctx, alice.ID, "alice", []string{"A-1-1-4"}, now, nil)
	fmt.Println(held.Seats, err)
	_, err = svc.HoldSeats(ctx, bob.ID, "bob", []string{"A-1-1-4"}, now, nil)
	var taken *seats.TakenError
	fmt.Println(errors.As(err, &taken), taken.Seats)
	if _, err := svc.Checkout(ctx, alice.ID, "alice", now, nil); err != nil {
		panic(err)
	}
	done, err := svc.Confirm(ctx, alice.ID, "alice", "payment-1", now, nil)
	fmt.Println(done.State, done.Reservation != "", err)
	// Output:
	// [A-1-1-4] <nil>
	// true [A-1-1-4]
	// finalised true <nil>
}
