package queue

import (
	"errors"
	"fmt"
	"math"
	"testing"
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
				s.add(id)
				s.add(id)
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
					s.add(id)
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
		s.add(fmt.Sprint(i))
	}
	data, err := s.MarshalBinary()
	if err != nil || len(data) != sketchSize {
		t.Fatalf("MarshalBinary: %d bytes, %v; want %d", len(data), err, sketchSize)
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
