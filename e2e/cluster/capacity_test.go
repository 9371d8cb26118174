package main

import (
	"math/rand/v2"
	"net/http"
	"testing"
	"time"
)

func TestPassCookie(t *testing.T) {
	name := "fairgate_pass_" + room
	tests := []struct {
		name    string
		lines   []string
		want    string
		setsOne bool
	}{
		{"none", nil, "", false},
		{"another cookie", []string{"other=1; Path=/"}, "", false},
		{"renewed", []string{name + "=abc; Path=/; HttpOnly"}, "abc", true},
		{"cleared by an expiry in the past", []string{name + "=; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT"}, "", true},
		{"cleared by Max-Age", []string{name + "=x; Path=/; Max-Age=0"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{"Set-Cookie": tt.lines}
			got, ok := passCookie(h)
			if got != tt.want || ok != tt.setsOne {
				t.Errorf("passCookie = %q, %v; want %q, %v", got, ok, tt.want, tt.setsOne)
			}
		})
	}
}

func TestHasHeaderInAnySpelling(t *testing.T) {
	for _, k := range []string{"Fairgate-End-Session", "fairgate_end_session", "FAIRGATE-END_SESSION"} {
		if !hasHeader(http.Header{k: {"1"}}, "Fairgate-End-Session") {
			t.Errorf("%q not found", k)
		}
	}
	if hasHeader(http.Header{"Fairgate-Pass": {"1"}}, "Fairgate-End-Session") {
		t.Error("another header found")
	}
}

func TestDrawStayIsSeededAndMixed(t *testing.T) {
	draws := func() []stayDraw {
		rng := rand.New(rand.NewPCG(1, 2))
		out := make([]stayDraw, 2000)
		for i := range out {
			out[i] = drawStay(rng, 0.25)
		}
		return out
	}
	a, b := draws(), draws()
	long, ends := 0, 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("draw %d differs with the same seed: %+v, %+v", i, a[i], b[i])
		}
		if a[i].long {
			long++
		}
		if a[i].end {
			ends++
		}
	}
	if share := float64(long) / float64(len(a)); share < 0.25 || share > 0.35 {
		t.Errorf("long stays %.2f of the draws, want about %.2f", share, 1-shortShare)
	}
	if share := float64(ends) / float64(len(a)); share < 0.2 || share > 0.3 {
		t.Errorf("ended sessions %.2f of the draws, want about 0.25", share)
	}
}

func TestActiveCountsPresentedAndNotEnded(t *testing.T) {
	s := newStayers(nil, nil, 1, 0, true, 5*time.Second)
	now := t0
	s.seen(1, now.Add(-time.Second), false)
	s.seen(2, now.Add(-6*time.Second), false) // out of the window
	s.seen(3, now.Add(-time.Second), true)    // ended
	s.seen(4, now, false)
	if got := s.active(now); got != 2 {
		t.Errorf("active = %d, want 2", got)
	}
}

func TestPickKeepsOrSpreads(t *testing.T) {
	ns := []*node{{name: "node1"}, {name: "node2"}, {name: "node3"}}
	weights := []float64{0.6, 0.3, 0.1}
	for _, sticky := range []bool{true, false} {
		s := newStayers(ns, weights, 1, 0, sticky, 5*time.Second)
		rng := rand.New(rand.NewPCG(1, 2))
		count := map[string]int{}
		for range 1000 {
			count[s.pick(rng, ns[2]).name]++
		}
		switch {
		case sticky && count["node3"] != 1000:
			t.Errorf("sticky: requests went to %v, want node3 only", count)
		case !sticky && (count["node1"] < 500 || count["node2"] < 200 || count["node3"] < 50 || count["node3"] > 200):
			t.Errorf("not sticky: requests went to %v, want about 600/300/100", count)
		}
	}
}

func TestJudgeCapacityWindow(t *testing.T) {
	c := &cluster{o: options{window: 10 * time.Second, tolerance: 0.10}, nodes: []*node{{name: "node1"}, {name: "node2"}}}
	window := func(a, b float64, waiting int64, refused int) []siteSample {
		out := make([]siteSample, 10)
		for i := range out {
			out[i] = siteSample{at: t0.Add(time.Duration(i) * time.Second), active: []float64{a, b}, waiting: waiting, refused: refused}
		}
		return out
	}
	spike := window(60, 60, 5, 0)
	spike[3].active[1] = 67 // one second above +10 %: the mean is fine, the cap is not
	spikeRefused := window(60, 60, 5, 3)
	spikeRefused[3].active[1] = 67
	tests := []struct {
		name                 string
		smps                 []siteSample
		pass, fail, skipping int
	}{
		{"at capacity", window(60, 61, 5, 0), 1, 0, 0},
		{"one node's mean low", window(60, 53, 5, 0), 0, 1, 0},
		{"low while the store refused admissions", window(60, 53, 5, 2), 0, 0, 1},
		{"a second above the cap", spike, 0, 1, 0},
		{"above, the store refusing or not", spikeRefused, 0, 1, 0},
		{"nobody waiting", window(40, 40, 0, 0), 0, 0, 1},
		{"too few samples", window(60, 60, 5, 0)[:5], 0, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, f, s := passed, failed, skipped
			c.judgeCapacityWindow(1, tt.smps, 60)
			if passed-p != tt.pass || failed-f != tt.fail || skipped-s != tt.skipping {
				t.Errorf("passed %d, failed %d, skipped %d; want %d, %d, %d", passed-p, failed-f, skipped-s, tt.pass, tt.fail, tt.skipping)
			}
		})
	}
}
