package room

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/admission/roomstate"
	"github.com/fairgate/fairgate/admission/roomstate/boltstore"
)

// A node that joins a capacity room while the stored rate is scheduled
// for windows ahead (Control.AdmitFrom) sizes the windows before it by
// the stored rate, not by the rate it set itself from a tally of no
// visitors yet: the window it joins in admits no more than the other
// nodes let it.
func TestAJoiningNodeSizesTheWindowsBeforeAdmitFromByTheStoredRate(t *testing.T) {
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "rooms.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	now := time.Unix(1_700_000_000, 0) // a window boundary
	clock := func() time.Time { return now }
	node := func(name string) *Shared {
		t.Helper()
		return joinedNode(t, Config{Room: "cap", Capacity: 100, Rate: 20}, name, store, clock)
	}
	a, b := node("a"), node("b")
	// The site fills: the controller's rate falls every tick, stored for
	// the windows from two polls on.
	for active := 80; active <= 90; active += 2 {
		now = now.Add(time.Second)
		for p := range active {
			a.See(fmt.Sprint("pass", p), now)
		}
		for _, n := range []*Shared{a, b} {
			if err := n.ClusterTick(t.Context(), now); err != nil {
				t.Fatal(err)
			}
		}
		for _, n := range []*Shared{a, b} {
			if err := n.Poll(t.Context(), now); err != nil {
				t.Fatal(err)
			}
		}
	}
	a.mu.Lock()
	admit, from := a.admit, a.admitFrom
	a.mu.Unlock()
	if !from.After(now) {
		t.Fatalf("the stored rate %v is for the windows from %v, want after now (%v)", admit, from, now)
	}
	// Node b restarts, and joins.
	b = node("b")
	// The windows before from are sized by the rate before it at the
	// other nodes, a little higher: a 1 s window at about 1/s admits 1
	// or 2 (a fractional rate's limits alternate).
	limit := 2 * admit
	got := 0
	for range 30 {
		_, _, err := b.lanes()[0].quota.Reserve(t.Context(), now, now)
		var spent *admission.QuotaSpentError
		if errors.As(err, &spent) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got++
	}
	if float64(got) > limit {
		t.Errorf("the joined node took %d admissions of the window it joined in, want at most %v (the stored rate %v/s)", got, limit, admit)
	}
}

// joinedNode is cfg's room state as node name on store, joined. Its
// store calls may take 10 s, as a loaded machine's can: after a call that
// timed out, the next one that did would stop its calls for a StoreCool
// the test's clock never ends.
func joinedNode(t *testing.T, cfg Config, name string, store roomstate.Store, clock func() time.Time) *Shared {
	t.Helper()
	cfg.StateStore = &StateStore{Type: StoreBolt, Path: "unused", Node: name, CallTimeout: Duration(10 * time.Second)}
	st, err := cfg.SettleStateStore("")
	if err != nil {
		t.Fatal(err)
	}
	sh, err := NewSharedOn(t.Context(), cfg, st, store, clock)
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Join(t.Context()); err != nil {
		t.Fatal(err)
	}
	return sh
}

// The node that ticks for a fifo room several nodes share stores the
// figures it predicts from with the clock at every tick (here its counter
// keeps its speed: no place waits), and every node adopts them, so one
// key is told one moment at every node. A node alone keeps its own.
func TestNodesPredictFromTheStoredTick(t *testing.T) {
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "rooms.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	cfg := Config{Room: "fifo", Rate: 5, QueueOrder: string(admission.OrderFIFO)}
	a := joinedNode(t, cfg, "a", store, clock)
	// A place was ranked: its page is told moments from then on.
	c, v, err := store.LoadControl(t.Context(), cfg.Room)
	if err != nil {
		t.Fatal(err)
	}
	c.RankSet = true
	if _, err := store.SaveControl(t.Context(), cfg.Room, c, v); err != nil {
		t.Fatal(err)
	}
	if err := a.Poll(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	if err := a.ClusterTick(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	if fs := a.Room.View(now).Forecasts; len(fs) > 0 {
		t.Fatalf("a node ticking alone noted a forecast at %v", fs[0].At)
	}
	b := joinedNode(t, cfg, "b", store, clock)
	for tick := range 4 {
		now = now.Add(time.Second)
		for _, n := range []*Shared{a, b} {
			if err := n.ClusterTick(t.Context(), now); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Poll(t.Context(), now); err != nil {
			t.Fatal(err)
		}
		fa, fb := a.Room.View(now).Forecasts, b.Room.View(now).Forecasts
		if len(fa) == 0 || !fa[len(fa)-1].At.Equal(now) {
			t.Fatalf("tick %d: the ticking node holds the forecasts %+v, want its tick's (%v) last", tick, fa, now)
		}
		if !slices.EqualFunc(fa, fb, func(x, y admission.Forecast) bool { return utc(x) == utc(y) }) {
			t.Errorf("tick %d: node b predicts from %+v, the ticking node from %+v", tick, fb, fa)
		}
	}
}

// utc is f with its times in UTC, as the store gives them back.
func utc(f admission.Forecast) admission.Forecast {
	f.At, f.From = f.At.UTC(), f.From.UTC()
	return f
}
