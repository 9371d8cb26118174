package boltstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairgate/fairgate/internal/crashtest"
	"github.com/fairgate/fairgate/seats"
	"github.com/fairgate/fairgate/seats/storetest"
)

// TestCrashKeepsConfirmedReservations runs a load of holds and confirms in a
// child process, kills it with SIGKILL mid-load, reopens the file, and
// checks that every reservation the child saw confirmed is there, whole, and
// that no seat has two owners.
func TestCrashKeepsConfirmedReservations(t *testing.T) {
	if os.Getenv("FAIRGATE_CRASH_CHILD") != "" {
		t.Skip("the child runs TestCrashChild")
	}
	db := filepath.Join(t.TempDir(), "seats.db")
	child := crashtest.Start(t, "TestCrashChild", "FAIRGATE_CRASH_CHILD", db)
	confirmed := map[string][]string{} // reservation → seats
	confirming := map[string]string{}  // session → its confirm's idempotency key
	// Kill after 300 confirmations, or after 20 s once at least 20 are in:
	// a loaded machine's slow fsyncs stretch the load, never the checks.
	soon, limit := time.After(20*time.Second), time.After(2*time.Minute)
	late := false
read:
	for len(confirmed) < 300 && !(late && len(confirmed) >= 20) {
		select {
		case line, ok := <-child.Lines:
			if !ok {
				break read
			}
			if f := strings.Fields(line); len(f) >= 3 && f[0] == "CONFIRMED" {
				confirmed[f[1]] = f[2:]
			} else if len(f) == 3 && f[0] == "CONFIRMING" {
				confirming[f[1]] = f[2]
			}
		case <-soon:
			late = true
		case <-limit:
			break read
		}
	}
	child.Kill(t)
	if len(confirmed) < 20 {
		t.Fatalf("the child confirmed only %d reservations before the kill", len(confirmed))
	}

	store, err := Open(db)
	if err != nil {
		t.Fatalf("reopening after the crash: %v", err)
	}
	defer store.Close()
	ctx := context.Background()
	owner := map[string]string{}
	ev, err := store.Event(ctx, "crash")
	if err != nil {
		t.Fatal(err)
	}
	for _, sec := range ev.Sections {
		list, err := store.SectionSeats(ctx, "crash", sec.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list {
			if s.Status == seats.Reserved {
				owner[s.ID] = s.Reservation
			}
		}
	}
	for resv, ids := range confirmed {
		for _, id := range ids {
			if owner[id] != resv {
				t.Errorf("confirmed reservation %s lost seat %s (now %q)", resv, id, owner[id])
			}
		}
	}
	// No seat with two owners: each reserved seat's reservation is one
	// finalised session that lists it, and no two sessions list the same seat.
	claimed := map[string]string{}
	for id, resv := range owner {
		sess, err := store.Session(ctx, "S"+strings.TrimPrefix(resv, "R"))
		if err != nil || sess.State != seats.StateFinalised || !contains(sess.Seats, id) {
			t.Errorf("seat %s reserved as %s without a finalised session holding it (%v)", id, resv, err)
		}
		if prev, ok := claimed[id]; ok && prev != resv {
			t.Errorf("seat %s owned by %s and %s", id, prev, resv)
		}
		claimed[id] = resv
	}
	// For every confirm under way when the process died, the idempotency
	// record exists exactly when the session was finalised, and it carries
	// the reservation id.
	recorded := 0
	for id, key := range confirming {
		sess, err := store.Session(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		rec, found, err := store.Key(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		finalised := sess.State == seats.StateFinalised
		if found != finalised || (found && (rec.Session == nil || rec.Session.Reservation != sess.Reservation)) {
			t.Errorf("session %s finalised %v, its confirm's record %v %+v", id, finalised, found, rec.Session)
		}
		if found {
			recorded++
		}
	}
	t.Logf("%d reservations confirmed before the kill, all intact; %d seats reserved on disk; %d of %d confirms under way had committed with their record", len(confirmed), len(owner), recorded, len(confirming))
	if len(confirming) == 0 {
		t.Fatal("the child announced no confirms")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestCrashChild is the child of the crash test: concurrent visitors hold
// and confirm until killed, printing each confirmation once it is committed.
func TestCrashChild(t *testing.T) {
	path := os.Getenv("FAIRGATE_CRASH_CHILD")
	if path == "" {
		t.Skip("only run as the crash test's child")
	}
	store, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	svc := seats.NewService(store, time.Now)
	ctx := context.Background()
	if _, err := svc.CreateEvent(ctx, seats.Stadium("crash", "crash", time.Now())); err != nil {
		t.Fatal(err)
	}
	crashtest.Work(16, func(w, i int) bool {
		user := fmt.Sprintf("w%d-%d", w, i)
		now := time.Now()
		sess, err := svc.OpenSession(ctx, "crash", user, "t-"+user, now, nil)
		if err != nil {
			return true
		}
		section := []string{fmt.Sprintf("L%d", 1+(w+i)%12)}
		held, err := svc.HoldBest(ctx, sess.ID, user, 1+i%3, section, now, nil)
		if err != nil {
			return true // sold out or lost races: a new visitor
		}
		if _, err := svc.Checkout(ctx, sess.ID, user, now, nil); err != nil {
			return true
		}
		key := &seats.Idempotency{Key: "confirm-" + sess.ID, Fingerprint: "fp", Status: 200}
		crashtest.Printf("CONFIRMING %s %s", sess.ID, key.Key)
		done, err := svc.Confirm(ctx, sess.ID, user, "pay", now, key)
		if err != nil {
			return true
		}
		crashtest.Printf("CONFIRMED %s %s", done.Reservation, strings.Join(held.Seats, " "))
		return true
	})
}

// TestCrashMidGroup kills the process in the middle of a group commit:
// after half of a group's ten holds ran inside its transaction, before the
// commit. On reopening, every write answered before is there with its
// idempotency record, and no member of the group left anything (neither a
// seat, nor a record, nor a session change): a group commits whole or not
// at all, whichever of its members had run.
func TestCrashMidGroup(t *testing.T) {
	if os.Getenv("FAIRGATE_CRASH_GROUP") != "" {
		t.Skip("the child runs TestCrashMidGroupChild")
	}
	db := filepath.Join(t.TempDir(), "seats.db")
	child := crashtest.Start(t, "TestCrashMidGroupChild", "FAIRGATE_CRASH_GROUP", db)
	type write struct{ key, session, seat string }
	var committed, launched []write
	mid := false
	limit := time.After(time.Minute)
read:
	for !mid {
		select {
		case line, ok := <-child.Lines:
			if !ok {
				break read
			}
			f := strings.Fields(line)
			switch {
			case len(f) == 4 && f[0] == "COMMITTED":
				committed = append(committed, write{f[1], f[2], f[3]})
			case len(f) == 4 && f[0] == "LAUNCHED":
				launched = append(launched, write{f[1], f[2], f[3]})
			case len(f) == 3 && f[0] == "MIDGROUP":
				mid = true
			}
		case <-limit:
			break read
		}
	}
	child.Kill(t)
	if !mid || len(committed) != 4 || len(launched) != 10 {
		t.Fatalf("the child stopped before the middle of its group: %v, %d committed, %d launched", mid, len(committed), len(launched))
	}

	store, err := Open(db)
	if err != nil {
		t.Fatalf("reopening after the crash: %v", err)
	}
	defer store.Close()
	ctx := context.Background()
	seatOf := map[string]seats.Seat{}
	for _, sec := range []string{"A", "AB"} {
		list, err := store.SectionSeats(ctx, "crash", sec)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list {
			seatOf[s.ID] = s
		}
	}
	for i, w := range append(committed, launched...) {
		want := i < len(committed)
		_, found, err := store.Key(ctx, w.key)
		if err != nil {
			t.Fatal(err)
		}
		sess, err := store.Session(ctx, w.session)
		if err != nil {
			t.Fatal(err)
		}
		held := seatOf[w.seat].LockedBy(w.session, storetest.T0)
		if found != want || held != want || contains(sess.Seats, w.seat) != want {
			t.Errorf("write %s (answered before the crash: %v): record %v, seat held %v, session lists it %v", w.key, want, found, held, contains(sess.Seats, w.seat))
		}
	}
}

// TestCrashMidGroupChild is TestCrashMidGroup's child: four holds commit
// one by one, then ten wait for one group, which dies after its sixth.
func TestCrashMidGroupChild(t *testing.T) {
	path := os.Getenv("FAIRGATE_CRASH_GROUP")
	if path == "" {
		t.Skip("only run as TestCrashMidGroup's child")
	}
	store, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	now := storetest.T0
	svc := seats.NewService(store, func() time.Time { return now })
	ctx := context.Background()
	ev := storetest.Event("crash")
	ev.HoldWindow = seats.Duration(time.Hour)
	if _, err := svc.CreateEvent(ctx, ev); err != nil {
		t.Fatal(err)
	}
	hold := func(i int) (key, session, seat string, run func() error) {
		user := fmt.Sprint("g", i)
		sess, err := svc.OpenSession(ctx, "crash", user, "t-"+user, now, nil)
		if err != nil {
			t.Fatal(err)
		}
		key, seat = fmt.Sprint("hold-", i), seats.SeatID("AB", "1", "1", i+1)
		return key, sess.ID, seat, func() error {
			_, err := svc.HoldSeats(ctx, sess.ID, user, []string{seat}, now, &seats.Idempotency{Key: key, Fingerprint: "fp", Status: 200})
			return err
		}
	}
	for i := range 4 {
		key, session, seat, run := hold(i)
		if err := run(); err != nil {
			t.Fatal(err)
		}
		fmt.Println("COMMITTED", key, session, seat)
	}
	runs := make([]func() error, 10)
	for i := range runs {
		key, session, seat, run := hold(4 + i)
		runs[i] = run
		fmt.Println("LAUNCHED", key, session, seat)
	}
	store.commit.afterMember = func(i, n int) {
		if n == len(runs) && i == n/2 {
			fmt.Println("MIDGROUP", i, n)
			select {} // inside the group's transaction until killed
		}
	}
	release := holdCommits(t, store)
	for _, run := range runs {
		go func() { _ = run() }()
	}
	release(len(runs))
	select {} // until killed
}
