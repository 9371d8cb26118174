package roomstate_test

import (
	"math"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission/roomstate"
)

// A window's limit is not rounded up: over consecutive windows the limits
// add up to the rate times the time (within one admission), whatever the
// rate's fraction. Rounding gave a rate of 2.5 a limit of 3 a second.
func TestBudgetWindowsAddUpToTheRate(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	for _, rate := range []float64{0.7, 1.5, 2.5, 10.5, 33.3, 500} {
		length := roomstate.WindowFor(rate, rate)
		b, err := roomstate.NewBudget(nil, "r", 1, length)
		if err != nil {
			t.Fatal(err)
		}
		const windows = 1000
		var sum int64
		for i := range windows {
			w := b.WindowAt(start.Add(time.Duration(i)*length), rate)
			if per := rate * length.Seconds(); float64(w.Limit) < math.Floor(per) || float64(w.Limit) > math.Ceil(per) {
				t.Fatalf("rate %v: window %d limit %d, want %v rounded either way", rate, w.Index, w.Limit, per)
			}
			sum += w.Limit
		}
		if want := rate * length.Seconds() * windows; math.Abs(float64(sum)-want) > 1 {
			t.Errorf("rate %v: %d windows of %v admit %d, want %.0f (±1)", rate, windows, length, sum, want)
		}
	}
}

// A node's rank blocks with a maximum age: sized to what it hands out in a
// quarter of the age, dropped when older, so ranks handed out by one node
// more than the age apart never interleave with another node's.
func TestRanksAge(t *testing.T) {
	st := openBolt(t)
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	r, err := roomstate.NewRanks(st, "room", 64)
	if err != nil {
		t.Fatal(err)
	}
	r.MaxAge(time.Second, clock)
	ctx := t.Context()
	// 100 ranks a second for 10 s: blocks grow to about 25.
	prev := int64(-1)
	for range 1000 {
		now = now.Add(10 * time.Millisecond)
		rank, err := r.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rank <= prev {
			t.Fatalf("rank %d after %d", rank, prev)
		}
		prev = rank
	}
	if d := r.Dropped(); d > 0 {
		t.Errorf("steady arrivals dropped %d ranks", d)
	}
	// Quiet for 5 s, then one arrival: the old block's rest is dropped, and
	// the new rank comes after every rank reserved meanwhile elsewhere.
	other, err := st.ReserveRanks(ctx, "room", 10)
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(5 * time.Second)
	rank, err := r.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rank < other+10 {
		t.Fatalf("after 5 quiet seconds rank %d, before another node's block [%d, %d)", rank, other, other+10)
	}
	if d := r.Dropped(); d > 64 {
		t.Errorf("dropped %d ranks, more than a block", d)
	}
}
