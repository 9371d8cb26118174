package admission

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestRefusalsGrowLedgerMemory: a visitor the admission hook turns away
// over and over holds and releases their place on every attempt; the
// ledger's memory must stay bounded by what it holds, not grow with the
// attempts until the records would have expired.
func TestRefusalsGrowLedgerMemory(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_900_000_000, 0)
	l := NewMemoryLedger(100, func() time.Time { return now })
	for i := range 10 {
		if _, fresh, err := l.Hold(ctx, fmt.Sprint("live-", i), Place{State: PlaceUsed}, now.Add(time.Hour)); err != nil || !fresh {
			t.Fatalf("hold: %v %v", fresh, err)
		}
	}
	for range 100_000 {
		now = now.Add(20 * time.Millisecond)
		if _, fresh, err := l.Hold(ctx, "refused", Place{State: PlaceUsed}, now.Add(11*time.Minute)); err != nil || !fresh {
			t.Fatalf("hold after release: %v %v", fresh, err)
		}
		if err := l.Release(ctx, "refused"); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(l.order); n > 2*l.Len()+compactSlack+1 {
		t.Fatalf("%d expiry entries for %d records after 100,000 refusals", n, l.Len())
	}
	// Compaction forgets nothing live.
	for i := range 10 {
		if p, _ := l.Lookup(ctx, fmt.Sprint("live-", i)); p.State != PlaceUsed {
			t.Fatalf("live-%d forgotten", i)
		}
	}
	now = now.Add(2 * time.Hour)
	if _, _, err := l.Hold(ctx, "late", Place{State: PlaceUsed}, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if l.Len() != 1 {
		t.Fatalf("%d records after every other expired, want 1", l.Len())
	}
}
