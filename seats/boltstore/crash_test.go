package boltstore

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fairgate/fairgate/seats"
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
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v")
	cmd.Env = append(os.Environ(), "FAIRGATE_CRASH_CHILD="+db)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	confirmed := map[string][]string{} // reservation → seats
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	// Kill after 300 confirmations, or after 20 s once at least 20 are in:
	// a loaded machine's slow fsyncs stretch the load, never the checks.
	soon, limit := time.After(20*time.Second), time.After(2*time.Minute)
	late := false
read:
	for len(confirmed) < 300 && !(late && len(confirmed) >= 20) {
		select {
		case line, ok := <-lines:
			if !ok {
				break read
			}
			if f := strings.Fields(line); len(f) >= 3 && f[0] == "CONFIRMED" {
				confirmed[f[1]] = f[2:]
			}
		case <-soon:
			late = true
		case <-limit:
			break read
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for range lines { // drain what the child wrote before it died
	}
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
	t.Logf("%d reservations confirmed before the kill, all intact; %d seats reserved on disk", len(confirmed), len(owner))
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
	var out sync.Mutex
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				user := fmt.Sprintf("w%d-%d", w, i)
				now := time.Now()
				sess, err := svc.OpenSession(ctx, "crash", user, "t-"+user, now)
				if err != nil {
					continue
				}
				section := []string{fmt.Sprintf("L%d", 1+(w+i)%12)}
				held, err := svc.HoldBest(ctx, sess.ID, user, 1+i%3, section, now, "")
				if err != nil {
					continue // sold out or lost races: a new visitor
				}
				if _, err := svc.Checkout(ctx, sess.ID, user, now, ""); err != nil {
					continue
				}
				done, err := svc.Confirm(ctx, sess.ID, user, "pay", now, "")
				if err != nil {
					continue
				}
				out.Lock()
				fmt.Printf("CONFIRMED %s %s\n", done.Reservation, strings.Join(held.Seats, " "))
				out.Unlock()
			}
		}()
	}
	wg.Wait()
}
