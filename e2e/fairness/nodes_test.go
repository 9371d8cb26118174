package main

import (
	"github.com/fairgate/fairgate/admission/tokens"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestNodeWeights(t *testing.T) {
	for _, tc := range []struct {
		name      string
		nodes     int
		weights   string
		jar       string
		want      []float64
		wantError string
	}{
		{"one node ignores the store flags", 1, "garbage", "", []float64{1}, ""},
		{"three nodes, the default shares", 3, defaultWeights, "/jar", []float64{0.6, 0.3, 0.1}, ""},
		{"two nodes, even", 2, "1,1", "/jar", []float64{0.5, 0.5}, ""},
		{"no nodes", 0, defaultWeights, "/jar", nil, "at least 1"},
		{"several nodes without DynamoDB Local", 3, defaultWeights, "", nil, "-dynamodb-jar"},
		{"a share per node", 2, defaultWeights, "/jar", nil, "3 shares for 2 nodes"},
		{"unreadable shares", 3, "60,x,10", "/jar", nil, "not a share"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := nodeWeights(tc.nodes, tc.weights, tc.jar)
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantError)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
			for i := range got {
				if math.Abs(got[i]-tc.want[i]) > 1e-12 {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func testRoom(t *testing.T) *room {
	t.Helper()
	cfg, err := tokens.GenerateKeys(kid)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := cfg.Load(tokens.Environment{})
	if err != nil {
		t.Fatal(err)
	}
	return &room{keys: ring}
}

// TestPlanSpreadsTabs: every tab has a node, the shares follow the
// weights, and a seed's arrivals do not depend on the number of nodes.
func TestPlanSpreadsTabs(t *testing.T) {
	r, sc := testRoom(t), scales["small"]
	one := plan(r, sc, t0, 7, []float64{1}, 0)
	three := plan(r, sc, t0, 7, []float64{0.6, 0.3, 0.1}, 0)
	if len(one) != len(three) {
		t.Fatalf("%d visitors on one node, %d on three", len(one), len(three))
	}
	counts, tabsTotal := make([]int, 3), 0
	for i, v := range three {
		if one[i].ID != v.ID || !one[i].Planned.Equal(v.Planned) {
			t.Fatalf("visitor %d: %s at %s on one node, %s at %s on three", i, one[i].ID, one[i].Planned, v.ID, v.Planned)
		}
		if len(v.Nodes) != v.tabCount() || len(one[i].Nodes) != v.tabCount() {
			t.Fatalf("%s: nodes %v, want one per tab (%d)", v.ID, v.Nodes, v.tabCount())
		}
		for _, n := range one[i].Nodes {
			if n != 0 {
				t.Fatalf("%s on node %d with one node", v.ID, n)
			}
		}
		for _, n := range v.Nodes {
			counts[n]++
			tabsTotal++
		}
	}
	for i, w := range []float64{0.6, 0.3, 0.1} {
		share := float64(counts[i]) / float64(tabsTotal)
		// About 380 tabs: a share is within 0.08 of its weight (over 3 sd).
		if math.Abs(share-w) > 0.08 {
			t.Errorf("node %d has %.2f of the tabs, want about %.2f", i+1, share, w)
		}
	}
}

func TestByNode(t *testing.T) {
	v := admittedVisitor("a", "l", tabs, 0, 1, 5)
	v.Nodes = []int{2, 0, 0, 1, 2}
	v.record(event{Tab: 3, Path: "/admit", Status: 200, At: at(6), Pass: fakePass("a", at(5))})
	w := admittedVisitor("b", "m", honest, -1, 1, -1)
	w.Nodes = []int{1}
	got := byNode([]*visitor{v, w}, 3)
	want := []nodeRow{{0, 2, 0}, {1, 2, 1}, {2, 2, 1}}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("by node %+v, want %+v", got, want)
		}
	}
}

func TestLeavePlan(t *testing.T) {
	tests := []struct {
		name      string
		n         int
		share     float64
		wantChose int
		wantOnce  int
	}{
		{"nobody", 300, 0, 0, 0},
		{"a third", 300, 0.3, 90, 45},
		{"an odd count", 10, 0.3, 3, 2},
		{"everyone", 8, 1, 8, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := leavePlan(tt.n, tt.share, 7)
			chose, once := 0, 0
			for i, k := range got {
				switch {
				case k == 1:
					once++
				case k != 0 && (k < 2 || k > 1+leaveMaxPolls):
					t.Fatalf("visitor %d leaves after %d attempts, want 1 to %d", i, k, 1+leaveMaxPolls)
				}
				if k > 0 {
					chose++
				}
			}
			if len(got) != tt.n || chose != tt.wantChose || once != tt.wantOnce {
				t.Fatalf("%d visitors, %d chosen, %d at once; want %d, %d, %d", len(got), chose, once, tt.n, tt.wantChose, tt.wantOnce)
			}
			if again := leavePlan(tt.n, tt.share, 7); !slices.Equal(again, got) {
				t.Fatalf("seed 7 gave %v, then %v", got, again)
			}
		})
	}
}

// TestPlanLeaversKeepTheSchedule: the leavers change no arrival.
func TestPlanLeaversKeepTheSchedule(t *testing.T) {
	r, sc := testRoom(t), scales["small"]
	none := plan(r, sc, t0, 7, []float64{1}, 0)
	some := plan(r, sc, t0, 7, []float64{1}, 0.3)
	leaving := 0
	for i, v := range some {
		if none[i].ID != v.ID || !none[i].Planned.Equal(v.Planned) || none[i].LeaveAfter != 0 {
			t.Fatalf("visitor %d: %s at %s without leavers, %s at %s with", i, none[i].ID, none[i].Planned, v.ID, v.Planned)
		}
		if v.LeaveAfter > 0 {
			if v.Pair >= 0 {
				t.Fatalf("%s has a twin and leaves", v.ID)
			}
			leaving++
		}
	}
	if leaving != 90 {
		t.Fatalf("%d leavers, want 90", leaving)
	}
}
