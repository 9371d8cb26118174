package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestPageFollowerCountsALostSlot scripts the room's answers to one page
// follower: a busy slot, then (each attempt at the slot) the answers in
// the table, then a pass.
func TestPageFollowerCountsALostSlot(t *testing.T) {
	tests := []struct {
		name     string
		answers  []string // outcomes after the busy one
		laterBy  time.Duration
		wantLost int
	}{
		{"admitted at the slot", nil, 0, 0},
		{"wait at the slot", []string{"wait"}, 0, 1},
		{"early, then wait: the slot still held", []string{"early", "wait"}, 0, 1},
		{"busy again within a second", []string{"busy"}, 500 * time.Millisecond, 0},
		{"busy again two seconds later", []string{"busy"}, 2 * time.Second, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &visitor{Strategy: honest, Nodes: []int{0}}
			scriptedTab(t, v, func(i int) map[string]any {
				slot := time.Now().Add(20 * time.Millisecond)
				ans := map[string]any{}
				switch {
				case i == 0:
					ans["outcome"] = "busy"
				case i-1 < len(tt.answers):
					ans["outcome"] = tt.answers[i-1]
					if tt.answers[i-1] == "busy" {
						slot = slot.Add(tt.laterBy)
					}
				default:
					return nil
				}
				ans["next_attempt"] = slot.UnixMilli()
				return ans
			})
			lost := 0
			for _, e := range v.Events {
				if e.SlotLost {
					lost++
				}
			}
			if v.Admitted.IsZero() || lost != tt.wantLost {
				t.Fatalf("admitted %v, slots lost %d, want %d", !v.Admitted.IsZero(), lost, tt.wantLost)
			}
		})
	}
}

// TestPageFollowerLeaves: a leaver presents its attempts, each answered
// wait, and closes its tab after the number it was given; a stayer goes
// on until its pass.
func TestPageFollowerLeaves(t *testing.T) {
	tests := []struct {
		name         string
		leaveAfter   int
		wantAttempts int64
		wantLeft     bool
	}{
		{"stays", 0, 5, false},
		{"right after the claim", 1, 1, true},
		{"after three attempts", 3, 3, true},
		{"admitted before it would leave", 9, 5, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := &visitor{Strategy: honest, Nodes: []int{0}, LeaveAfter: tt.leaveAfter}
			got := scriptedTab(t, v, func(i int) map[string]any {
				if i+1 == 5 {
					return nil
				}
				return map[string]any{"outcome": "wait"}
			})
			if got != tt.wantAttempts || v.Left.IsZero() != !tt.wantLeft || v.Admitted.IsZero() != tt.wantLeft {
				t.Fatalf("attempts %d, left %v, admitted %v; want %d attempts, left %v", got, !v.Left.IsZero(), !v.Admitted.IsZero(), tt.wantAttempts, tt.wantLeft)
			}
			if tt.wantLeft && !v.Left.Equal(v.Events[len(v.Events)-1].At) {
				t.Fatalf("left at %s, want its last answer's moment %s", v.Left, v.Events[len(v.Events)-1].At)
			}
		})
	}
}

// scriptedTab runs one tab of v against a room whose answer to the i-th
// admit attempt (from 0) is answer's: a pass when it returns nil, else a
// 429 with those fields added to a waiting token's. It returns how many
// attempts the tab made.
func scriptedTab(t *testing.T, v *visitor, answer func(i int) map[string]any) int64 {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ans := map[string]any{"token": "tk", "challenge": "AAAAAAAAAAAAAAAAAAAAAA", "difficulty": 1, "retry_after": 0.01}
		if r.URL.Path == "/_fairgate/admit" {
			fields := answer(int(n.Add(1)) - 1)
			if fields == nil {
				_ = json.NewEncoder(w).Encode(map[string]any{"admitted": true, "pass": "p"})
				return
			}
			for k, x := range fields {
				ans[k] = x
			}
			w.WriteHeader(http.StatusTooManyRequests)
		}
		_ = json.NewEncoder(w).Encode(ans)
	}))
	defer srv.Close()
	d := &driver{client: srv.Client(), sites: []string{srv.URL}, timing: pageTiming{OneWayCap: time.Millisecond}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d.newTab(v, 0, "login=x").run(ctx)
	return n.Load()
}
