package admission

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"
)

// TestSketchEstimate: from an empty sketch to 200,000 ids, the estimate is
// within three standard errors (3 × SketchError) of the distinct ids
// added, however often each is added.
func TestSketchEstimate(t *testing.T) {
	for _, n := range []int{0, 1, 10, 100, 1_000, 5_000, 20_000, 200_000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var s Sketch
			for i := range n {
				id := fmt.Sprint("pass-", i)
				s.Add(id)
				s.Add(id)
			}
			got := s.Estimate()
			if tol := 3 * SketchError * float64(n); math.Abs(got-float64(n)) > math.Max(tol, 0.5) {
				t.Errorf("estimate %.1f of %d distinct ids, want within %.1f", got, n, tol)
			}
		})
	}
}

// TestSketchMerge: sketches of overlapping sets merge into their union's:
// k nodes each seeing every id count them once, not k times.
func TestSketchMerge(t *testing.T) {
	tests := []struct {
		name        string
		nodes, ids  int
		overlapping bool
		want        float64
	}{
		{"every id on every node", 5, 3_000, true, 3_000},
		{"each node its own ids", 4, 1_000, false, 4_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var union Sketch
			for node := range tt.nodes {
				var s Sketch
				for i := range tt.ids {
					id := fmt.Sprint("pass-", i)
					if !tt.overlapping {
						id = fmt.Sprint("node", node, "-", id)
					}
					s.Add(id)
				}
				union.Merge(&s)
			}
			if got := union.Estimate(); math.Abs(got-tt.want) > 3*SketchError*tt.want {
				t.Errorf("merged estimate %.0f, want %.0f within %.1f%%", got, tt.want, 300*SketchError)
			}
		})
	}
}

func TestSketchMarshal(t *testing.T) {
	var s Sketch
	for i := range 500 {
		s.Add(fmt.Sprint(i))
	}
	data, err := s.MarshalBinary()
	if err != nil || len(data) != SketchSize {
		t.Fatalf("MarshalBinary: %d bytes, %v; want %d", len(data), err, SketchSize)
	}
	var back Sketch
	if err := back.UnmarshalBinary(data); err != nil || back != s {
		t.Fatalf("UnmarshalBinary: %v, same %v", err, back == s)
	}
	bad := func(mutate func([]byte) []byte) []byte { return mutate(append([]byte(nil), data...)) }
	for name, data := range map[string][]byte{
		"short":             data[:100],
		"other version":     bad(func(b []byte) []byte { b[0]++; return b }),
		"other registers":   bad(func(b []byte) []byte { b[1]--; return b }),
		"register too high": bad(func(b []byte) []byte { b[7] = 64; return b }),
	} {
		if err := new(Sketch).UnmarshalBinary(data); !errors.Is(err, errSketch) {
			t.Errorf("%s: %v, want errSketch", name, err)
		}
	}
}

func TestActiveSetSketch(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	a := NewActiveSet(time.Minute)
	for i := range 1_000 {
		a.See(fmt.Sprint("pass-", i), t0)
	}
	a.See("late", t0.Add(50*time.Second))
	a.End("pass-0", t0.Add(time.Second))
	if got := a.Sketch(t0.Add(30 * time.Second)).Estimate(); math.Abs(got-1_001) > 3*SketchError*1_001 {
		t.Errorf("sketch of 1,001 passes in the window (one of them ended) estimates %.0f", got)
	}
	if got := a.Sketch(t0.Add(61 * time.Second)).Estimate(); got < 0.5 || got > 1.5 {
		t.Errorf("sketch after the window estimates %.1f, want the one pass still in it", got)
	}
}

func TestRoomTally(t *testing.T) {
	tests := []struct {
		name     string
		sum      Tally
		distinct float64
		staying  float64
		nodes    int
		want     Tally
	}{
		{"one node keeps its exact count", Tally{Active: 100, Leaving: 4, Ended: 1, EndedInWindow: 3}, 103, 99, 1, Tally{Active: 100, Leaving: 4, Ended: 1, EndedInWindow: 3}},
		{"passes on two nodes each count once", Tally{Active: 200, Leaving: 8, Ended: 2}, 100, 96, 2, Tally{Active: 100, Leaving: 4, Ended: 2}},
		{"a pass leaving one node but staying at another stays", Tally{Active: 200, Leaving: 60}, 100, 97, 2, Tally{Active: 100, Leaving: 3}},
		{"departures never above their sum", Tally{Active: 200, Leaving: 2}, 100, 90, 2, Tally{Active: 100, Leaving: 2}},
		{"nor below none", Tally{Active: 200, Leaving: 2}, 100, 101, 2, Tally{Active: 100}},
		{"without every staying sketch the summed departures scaled", Tally{Active: 200, Leaving: 60}, 100, math.NaN(), 2, Tally{Active: 100, Leaving: 30}},
		{"passes ended on one node are out on all", Tally{Active: 210, Leaving: 8, Ended: 2, EndedInWindow: 5}, 105, math.NaN(), 2, Tally{Active: 100, Leaving: 8 * 100.0 / 210, Ended: 2, EndedInWindow: 5}},
		{"ended passes are staying, not leaving", Tally{Active: 210, Leaving: 8, Ended: 2, EndedInWindow: 5}, 105, 101, 2, Tally{Active: 100, Leaving: 4, Ended: 2, EndedInWindow: 5}},
		{"never above the sum", Tally{Active: 100, Leaving: 4}, 103, 99, 3, Tally{Active: 100, Leaving: 4}},
		{"an empty room", Tally{Ended: 1}, 0.4, 0.4, 3, Tally{Ended: 1}},
		{"NaN keeps the sum", Tally{Active: 10}, math.NaN(), math.NaN(), 2, Tally{Active: 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RoomTally(tt.sum, tt.distinct, tt.staying, tt.nodes); got != tt.want {
				t.Errorf("RoomTally = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestStayingSketchLeavesOutThePassesLeaving(t *testing.T) {
	a := NewActiveSet(time.Minute)
	now := t0.Add(time.Hour)
	a.See("staying", now.Add(-10*time.Second))
	a.See("leaving", now.Add(-59*time.Second)) // its window ends within 2 s
	a.See("ended", now.Add(-5*time.Second))
	a.End("ended", now.Add(-time.Second))
	if got := a.Sketch(now).Estimate(); math.Round(got) != 3 {
		t.Errorf("sketch estimates %.2f, want the three passes", got)
	}
	if got := a.StayingSketch(now, CapacityLookahead).Estimate(); math.Round(got) != 2 {
		t.Errorf("staying sketch estimates %.2f, want the staying and the ended pass", got)
	}
}
