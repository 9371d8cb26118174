package storetest

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/fairgate/fairgate/seats"
)

// Stadium seats: sections of 25 rows of 80 (2,000 seats, four pages of
// seats.SeatPageSize with rows across page ends).
const (
	stadiumRows        = 25
	stadiumSeatsPerRow = 80
	stadiumSection     = stadiumRows * stadiumSeatsPerRow
)

// StadiumSize is the stadium case's number of seats: 200,000 when
// FAIRGATE_STADIUM=1, else 30,000 (15 sections), which keeps the normal
// run short on DynamoDB Local and still stores far more seats than one
// 400 KB item could hold.
func StadiumSize() int {
	if os.Getenv("FAIRGATE_STADIUM") == "1" {
		return 200_000
	}
	return 30_000
}

// Stadium is an event of n seats (a multiple of 2,000): sections S001,
// S002, … of one block of rows 01 to 25, 80 seats a row, at most 20 seats
// a session.
func Stadium(id string, n int) seats.Event {
	ev := seats.Event{ID: id, Name: "Stadium", MaxSeats: seats.MaxSeatsPerHold,
		HoldWindow: seats.Duration(10 * time.Minute), CheckoutWindow: seats.Duration(5 * time.Minute)}
	for s := range n / stadiumSection {
		blk := seats.Block{ID: "1"}
		for r := range stadiumRows {
			row := seats.Row{ID: fmt.Sprintf("%02d", r+1)}
			for i := 1; i <= stadiumSeatsPerRow; i++ {
				row.Seats = append(row.Seats, seats.SeatSpec{Number: i})
			}
			blk.Rows = append(blk.Rows, row)
		}
		id := fmt.Sprintf("S%03d", s+1)
		ev.Sections = append(ev.Sections, seats.Section{ID: id, Name: id, Price: 5000, Blocks: []seats.Block{blk}})
	}
	return ev
}

// testStadium imports a StadiumSize event and holds, runs best available
// (past the first page of a section) and releases in it.
func testStadium(t *testing.T, newStore func(t *testing.T) seats.Store) {
	f := setup(t, newStore)
	n := StadiumSize()
	id := "stadium-" + f.event
	start := time.Now()
	if _, err := f.svc.CreateEvent(f.ctx, Stadium(id, n)); err != nil {
		t.Fatalf("importing %d seats: %v", n, err)
	}
	t.Logf("imported %d seats in %v", n, time.Since(start).Round(time.Millisecond))
	f.event = id

	checkPages(t, f, "S001")
	last := fmt.Sprintf("S%03d", n/stadiumSection)
	if _, list, err := f.svc.SectionMap(f.ctx, id, last); err != nil || len(list) != stadiumSection {
		t.Fatalf("section %s map: %d seats, %v", last, len(list), err)
	}

	// Rows 01 to 07 of S001 (seats 1 to 560: row 07 crosses the end of
	// the first page) get no run of 20 free seats.
	for user, rows := range map[string][]int{"block1": {1, 2, 3, 4, 5}, "block2": {6, 7}} {
		var ids []string
		for _, r := range rows {
			for _, n := range []int{20, 40, 60, 70} {
				ids = append(ids, fmt.Sprintf("S001-1-%02d-%d", r, n))
			}
		}
		b := f.session(user, T0)
		if _, err := f.svc.HoldSeats(f.ctx, b.ID, user, ids, T0, nil); err != nil {
			t.Fatalf("%s holds %v: %v", user, ids, err)
		}
	}
	far := f.session("far", T0)
	farSeat := fmt.Sprintf("%s-1-%02d-%d", last, stadiumRows, stadiumSeatsPerRow)
	if _, err := f.svc.HoldSeats(f.ctx, far.ID, "far", []string{farSeat}, T0, nil); err != nil {
		t.Fatalf("holding %s: %v", farSeat, err)
	}

	bob := f.session("bob", T0)
	sess, err := f.svc.HoldBest(f.ctx, bob.ID, "bob", 20, []string{"S001"}, T0, nil)
	var want []string
	for n := 1; n <= 20; n++ {
		want = append(want, fmt.Sprintf("S001-1-08-%d", n))
	}
	if err != nil || !slices.Equal(sess.Seats, want) {
		t.Fatalf("best 20 in S001: %v %v, want row 08 seats 1-20", sess.Seats, err)
	}
	if _, err := f.svc.ReleaseSeat(f.ctx, bob.ID, "bob", want[0], T0, nil); err != nil {
		t.Fatalf("releasing %s: %v", want[0], err)
	}
	if st := f.seat(want[0]); st.StatusAt(T0) != seats.Available {
		t.Fatalf("released seat %s is %s", want[0], st.StatusAt(T0))
	}
	if st := f.seat(want[1]); st.StatusAt(T0) != seats.Locked || st.Session != bob.ID {
		t.Fatalf("seat %s after the release of another: %+v", want[1], st)
	}

	_, counts, err := f.svc.EventCounts(f.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	locked, total := 0, 0
	for _, c := range counts {
		locked, total = locked+c.Locked, total+c.Total
	}
	if total != n || locked != 28+1+19 {
		t.Fatalf("counts: %d seats, %d locked; want %d and %d", total, locked, n, 28+1+19)
	}
}

// checkPages reads a section page by page and checks the pages are the
// section's seats, each once, in order, a row's seats together.
func checkPages(t *testing.T, f *fixture, section string) {
	t.Helper()
	var got []string
	rows := map[string]bool{}
	prevRow := ""
	after, pages := "", 0
	for {
		page, next, err := f.store.SeatPage(f.ctx, f.event, section, after, seats.SeatPageSize)
		if err != nil {
			t.Fatalf("page after %q of %s: %v", after, section, err)
		}
		if len(page) > seats.SeatPageSize {
			t.Fatalf("page of %d seats, over %d", len(page), seats.SeatPageSize)
		}
		pages++
		for _, st := range page {
			if st.Row != prevRow {
				if rows[st.Row] {
					t.Fatalf("row %s of %s comes back after another row", st.Row, section)
				}
				rows[st.Row], prevRow = true, st.Row
			}
			got = append(got, st.ID)
		}
		if after = next; next == "" {
			break
		}
	}
	all, err := f.store.SectionSeats(f.ctx, f.event, section)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]string, len(all))
	for i, st := range all {
		want[i] = st.ID
	}
	if len(got) != stadiumSection || !slices.Equal(got, want) || pages < stadiumSection/seats.SeatPageSize {
		t.Fatalf("section %s in %d pages: %d seats (%d in SectionSeats, want %d)", section, pages, len(got), len(want), stadiumSection)
	}
}
