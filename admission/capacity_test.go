package admission

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission/tokens"
)

func TestCapacityControllerRate(t *testing.T) {
	c := CapacityController{Capacity: 1000, Ceiling: 50, Settle: 10 * time.Second}
	tests := []struct {
		name            string
		active, leaving float64
		want            float64
	}{
		{"at capacity admits those leaving", 1000, 6, 3},
		{"a gap is closed over settle", 900, 6, 13},
		{"a big gap stops at the ceiling", 0, 6, 50},
		{"over capacity admits less than leave", 1020, 6, 1},
		{"far over capacity admits almost nothing", 2000, 6, MinCapacityRate},
		{"full with nobody leaving", 1000, 0, MinCapacityRate},
		{"a negative count leaving counts as none", 990, -5, 1},
		{"NaN is the floor", math.NaN(), 3, MinCapacityRate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.Rate(tt.active, tt.leaving); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("Rate(%v, %v) = %v, want %v", tt.active, tt.leaving, got, tt.want)
			}
		})
	}
	if got := (CapacityController{Capacity: 10}).Rate(0, 0); got != MinCapacityRate {
		t.Errorf("no ceiling: Rate = %v, want the floor %v", got, MinCapacityRate)
	}
}

func TestActiveSetCountsDistinctPassesInTheWindow(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	a := NewActiveSet(time.Minute)
	a.See("a", t0)
	a.See("a", t0.Add(10*time.Second))
	a.See("b", t0.Add(5*time.Second))
	a.See("", t0) // no id: not counted
	if got := a.Count(t0.Add(30 * time.Second)); got != 2 {
		t.Fatalf("Count = %v, want 2 (a presented twice counts once)", got)
	}
	// b leaves the window at t0+65s; a, last seen at t0+10s, at t0+70s.
	if got := a.Count(t0.Add(66 * time.Second)); got != 1 {
		t.Fatalf("Count after b's window = %v, want 1", got)
	}
	if got := a.Tally(t0.Add(66*time.Second), 5*time.Second); got != (Tally{Active: 1, Leaving: 1}) {
		t.Fatalf("Tally = %+v, want a active and leaving within 5 s", got)
	}
	if got := a.Tally(t0.Add(66*time.Second), 3*time.Second); got != (Tally{Active: 1}) {
		t.Fatalf("Tally = %+v, want a active, not leaving within 3 s", got)
	}
	if !a.End("a", t0.Add(67*time.Second)) {
		t.Fatal("End(a) reported a as not counted")
	}
	a.See("a", t0.Add(68*time.Second)) // a request under way when it ended
	if got := a.Count(t0.Add(69 * time.Second)); got != 0 {
		t.Fatalf("Count after End = %v, want 0", got)
	}
	a.See("late", t0.Add(80*time.Second))
	a.See("late", t0.Add(79*time.Second)) // an older request finishing late
	if got := a.Count(t0.Add(80*time.Second + time.Minute)); got != 0 {
		t.Errorf("a late older presentation kept the pass: Count = %v, want 0", got)
	}
}

func TestRenewPass(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	pc := tokens.PassClaims{Registered: tokens.Registered{ID: "p", ExpiresAt: t0.Add(10 * time.Minute).Unix()}}
	tests := []struct {
		name string
		at   time.Duration
		ttl  time.Duration
		ok   bool
	}{
		{"more than half left", 2 * time.Minute, 15 * time.Minute, false},
		{"exactly half left", 10*time.Minute - 15*time.Minute/2, 15 * time.Minute, false},
		{"less than half left", 3 * time.Minute, 15 * time.Minute, true},
		{"no ttl", 9 * time.Minute, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := t0.Add(tt.at)
			got, ok := RenewPass(pc, now, tt.ttl)
			if ok != tt.ok {
				t.Fatalf("renewed %v, want %v", ok, tt.ok)
			}
			want := pc.ExpiresAt
			if ok {
				want = now.Add(tt.ttl).Unix()
			}
			if got.ExpiresAt != want || got.ID != pc.ID {
				t.Errorf("got exp %d id %q, want exp %d id %q", got.ExpiresAt, got.ID, want, pc.ID)
			}
		})
	}
}

// visit is an admitted visitor's next presentation of their pass.
type visit struct {
	id   string
	at   time.Time
	left time.Time // when the visitor stops presenting
}

type visits []visit

func (v visits) Len() int           { return len(v) }
func (v visits) Less(i, j int) bool { return v[i].at.Before(v[j].at) }
func (v visits) Swap(i, j int)      { v[i], v[j] = v[j], v[i] }
func (v *visits) Push(x any)        { *v = append(*v, x.(visit)) }
func (v *visits) Pop() any {
	old := *v
	x := old[len(old)-1]
	*v = old[:len(old)-1]
	return x
}

// stayDist draws how long an admitted visitor stays on the site.
type stayDist func(r *rand.Rand) time.Duration

func expStay(mean time.Duration) stayDist {
	return func(r *rand.Rand) time.Duration { return time.Duration(r.ExpFloat64() * float64(mean)) }
}

func bimodalStay(short, long time.Duration, pShort float64) stayDist {
	return func(r *rand.Rand) time.Duration {
		if r.Float64() < pShort {
			return expStay(short)(r)
		}
		return expStay(long)(r)
	}
}

// simulateCapacity runs a room with an endless queue under the capacity
// controller for the given time, one tick a second: the rate set at a tick
// admits over the next second, the controller sees the count lag seconds
// late (the cluster's publication and poll), and each admitted visitor
// presents their pass every 1 to 20 s until their stay ends. It returns
// the active count after each tick.
func simulateCapacity(seed uint64, capacity, ceiling float64, lag int, stay stayDist, length time.Duration) []float64 {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	t0 := time.Unix(1_000_000, 0)
	active := NewActiveSet(3 * time.Minute)
	ctl := CapacityController{Capacity: capacity, Ceiling: ceiling}
	var pending visits
	var counts, leaving []float64
	rate, owed, next := 0.0, 0.0, 0
	for sec := range int(length / time.Second) {
		start := t0.Add(time.Duration(sec) * time.Second)
		end := start.Add(time.Second)
		owed += rate
		n := int(owed)
		owed -= float64(n)
		for i := range n {
			at := start.Add(time.Duration(i) * time.Second / time.Duration(n))
			heap.Push(&pending, visit{id: fmt.Sprint(next), at: at, left: at.Add(stay(rng))})
			next++
		}
		for pending.Len() > 0 && pending[0].at.Before(end) {
			v := heap.Pop(&pending).(visit)
			active.See(v.id, v.at)
			v.at = v.at.Add(time.Second + time.Duration(rng.Float64()*float64(19*time.Second)))
			if v.at.Before(v.left) {
				heap.Push(&pending, v)
			}
		}
		tally := active.Tally(end, CapacityLookahead)
		counts, leaving = append(counts, tally.Active), append(leaving, tally.Leaving)
		seen := max(0, len(counts)-1-lag)
		rate = ctl.Rate(counts[seen], leaving[seen])
	}
	return counts
}

// TestCapacityHoldsTheSiteAtCapacity runs the controller on stays drawn
// from short, long and bimodal distributions: once the site has filled, the
// active count stays within ±5% of the capacity, and no 10 s window's mean
// rises above +5% (nor any single second's count).
func TestCapacityHoldsTheSiteAtCapacity(t *testing.T) {
	const capacity, ceiling = 1000.0, 50.0
	tests := []struct {
		name string
		stay stayDist
		lag  int
	}{
		{"short stays", expStay(30 * time.Second), 0},
		{"short stays, counts 2 s late", expStay(30 * time.Second), 2},
		{"long stays", expStay(20 * time.Minute), 0},
		{"long stays, counts 2 s late", expStay(20 * time.Minute), 2},
		{"bimodal stays", bimodalStay(20*time.Second, 15*time.Minute, 0.7), 0},
		{"bimodal stays, counts 2 s late", bimodalStay(20*time.Second, 15*time.Minute, 0.7), 2},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			counts := simulateCapacity(uint64(i+1), capacity, ceiling, tt.lag, tt.stay, 40*time.Minute)
			full := -1
			for s, c := range counts {
				if c >= 0.95*capacity {
					full = s
					break
				}
			}
			if full < 0 || full > int(2*capacity/ceiling) {
				t.Fatalf("the site filled at second %d, want within %v s (capacity over the ceiling, twice)", full, 2*capacity/ceiling)
			}
			lo, hi := math.Inf(1), math.Inf(-1)
			for s := full; s+10 <= len(counts); s++ {
				mean := 0.0
				for _, c := range counts[s : s+10] {
					mean += c / 10
					if c > 1.05*capacity {
						t.Fatalf("second %d: %v active, above capacity +5%%", s, c)
					}
				}
				lo, hi = math.Min(lo, mean), math.Max(hi, mean)
			}
			t.Logf("filled at %d s; 10 s means from %.0f to %.0f (capacity %.0f)", full, lo, hi, capacity)
			if lo < 0.95*capacity || hi > 1.05*capacity {
				t.Errorf("10 s means from %.0f to %.0f, want within ±5%% of %.0f", lo, hi, capacity)
			}
		})
	}
}

// BenchmarkActiveSetSee is the cost a protected request adds: one pass
// presented again, among 100,000 active ones, from parallel requests.
func BenchmarkActiveSetSee(b *testing.B) {
	a := NewActiveSet(3 * time.Minute)
	now := time.Unix(1_000_000, 0)
	ids := make([]string, 100_000)
	for i := range ids {
		ids[i] = fmt.Sprint("pass-", i)
		a.See(ids[i], now)
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			a.See(ids[i%len(ids)], now)
			i += 7919
		}
	})
}

// BenchmarkActiveSetTally is the tick's sweep over 100,000 active passes.
func BenchmarkActiveSetTally(b *testing.B) {
	a := NewActiveSet(3 * time.Minute)
	now := time.Unix(1_000_000, 0)
	for i := range 100_000 {
		a.See(fmt.Sprint("pass-", i), now)
	}
	b.ResetTimer()
	for range b.N {
		a.Tally(now, CapacityLookahead)
	}
}
