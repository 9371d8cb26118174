package boltstore

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission/roomstate"
	"github.com/fairgate/fairgate/admission/roomstate/storetest"
	"github.com/fairgate/fairgate/internal/crashtest"
)

// crashWindow is the budget window the crash child reserves from.
var crashWindow = roomstate.Window{Index: 1, Limit: 1 << 40, Expires: storetest.T0.Add(time.Hour)}

// TestCrashKeepsEveryConsumedID runs concurrent admissions in a child
// process (reserve budget, consume an id, take ranks), kills it with
// SIGKILL mid-load, reopens the file and checks what survived: every id the
// child was told it consumed is still consumed (so no place is admitted
// twice after a crash), the budget on disk covers every grant the child
// saw, and the rank counter is past every rank it handed out. What a crash
// may lose is only the batch in flight, whose callers had no answer yet.
func TestCrashKeepsEveryConsumedID(t *testing.T) {
	if os.Getenv("FAIRGATE_ROOMSTATE_CRASH_CHILD") != "" {
		t.Skip("the child runs TestCrashChild")
	}
	db := dbPath(t)
	child := crashtest.Start(t, "TestCrashChild", "FAIRGATE_ROOMSTATE_CRASH_CHILD", db)
	var consumed []string
	var granted, lastRank int64
	timeout := time.After(20 * time.Second)
read:
	for len(consumed) < 500 {
		select {
		case line, ok := <-child.Lines:
			if !ok {
				break read
			}
			f := strings.Fields(line)
			if len(f) != 4 || f[0] != "ADMITTED" {
				continue
			}
			consumed = append(consumed, f[1])
			g, _ := strconv.ParseInt(f[2], 10, 64)
			r, _ := strconv.ParseInt(f[3], 10, 64)
			granted += g
			lastRank = max(lastRank, r)
		case <-timeout:
			break read
		}
	}
	child.Kill(t)
	if len(consumed) < 50 {
		t.Fatalf("the child admitted only %d before the kill", len(consumed))
	}

	s, err := Open(db, 0)
	if err != nil {
		t.Fatalf("reopening after the crash: %v", err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, id := range consumed {
		ok, err := storetest.Consume(ctx, s, "crash", id, storetest.T0.Add(time.Hour), storetest.T0)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			t.Errorf("id %s, consumed before the crash, was consumable again after it", id)
		}
	}
	// Whatever was reserved on disk is at least what the child was granted:
	// asking for everything left shows how much was used.
	left, err := s.ReserveBudget(ctx, "crash", crashWindow, crashWindow.Limit)
	if err != nil {
		t.Fatal(err)
	}
	if used := crashWindow.Limit - left.N; used < granted {
		t.Errorf("the budget on disk records %d used, but the child was granted %d", used, granted)
	}
	next, err := s.ReserveRanks(ctx, "crash", 1)
	if err != nil {
		t.Fatal(err)
	}
	if next <= lastRank {
		t.Errorf("the rank counter restarts at %d, at or below rank %d handed out before the crash", next, lastRank)
	}
	t.Logf("%d admissions acknowledged before the kill: every id still consumed, budget and ranks ahead of them", len(consumed))
}

// TestCrashChild is the crash test's child: concurrent admissions until
// killed, each printed once its writes have returned.
func TestCrashChild(t *testing.T) {
	path := os.Getenv("FAIRGATE_ROOMSTATE_CRASH_CHILD")
	if path == "" {
		t.Skip("only run as the crash test's child")
	}
	s := open(t, path)
	ctx := context.Background()
	crashtest.Work(16, func(w, i int) bool {
		got, err := s.ReserveBudget(ctx, "crash", crashWindow, 1)
		if err != nil || got.N != 1 {
			t.Errorf("ReserveBudget = %+v, %v", got, err)
			return false
		}
		id := fmt.Sprintf("w%d-%d", w, i)
		ok, err := storetest.Consume(ctx, s, "crash", id, storetest.T0.Add(time.Hour), storetest.T0)
		if err != nil || !ok {
			t.Errorf("Consume(%s) = %v, %v", id, ok, err)
			return false
		}
		rank, err := s.ReserveRanks(ctx, "crash", 1)
		if err != nil {
			t.Errorf("ReserveRanks: %v", err)
			return false
		}
		crashtest.Printf("ADMITTED %s %d %d", id, got.N, rank)
		return true
	})
}
