package admission

import (
	"context"
	"errors"
	"math"
	"testing"
)

func TestLaneRates(t *testing.T) {
	tests := []struct {
		name   string
		shares []float64
		active []bool
		want   []float64
	}{
		{"all active get their shares", []float64{0.7, 0.2, 0.1}, []bool{true, true, true}, []float64{70, 20, 10}},
		{"none active keeps the shares", []float64{0.7, 0.2, 0.1}, []bool{false, false, false}, []float64{70, 20, 10}},
		{"empty vip lane goes to the default lane", []float64{0.8, 0.2}, []bool{true, false}, []float64{100, 20}},
		{"empty default lane goes to the vip lane", []float64{0.8, 0.2}, []bool{false, true}, []float64{80, 100}},
		{"one empty lane of three is split by share", []float64{0.6, 0.2, 0.2}, []bool{true, true, false}, []float64{75, 25, 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := LaneRates(100, tt.shares, tt.active)
			for i := range got {
				if math.Abs(got[i]-tt.want[i]) > 1e-9 {
					t.Fatalf("rates = %v, want %v", got, tt.want)
				}
			}
		})
	}
}

// A token stays in the lane it was issued in: another lane's room refuses
// it at admission and on resume, whatever the visitor presents.
func TestLaneTokenRefusedInAnotherLane(t *testing.T) {
	now := t0
	gate := testGate(t, 1000)
	newRoom := func(lane string) *Room {
		return testRoom(t, func(c *RoomConfig) { c.Lane, c.State = lane, StateOpen })
	}
	vip, plain := newRoom("vip"), newRoom("")
	who := Visitor{Subject: "alice"}
	tk, err := gate.Issue(vip, who, now)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Claims.Lane != "vip" {
		t.Fatalf("lane claim = %q, want vip", tk.Claims.Lane)
	}
	if _, err := gate.Resume(plain, tk.Token, who, now); !errors.Is(err, ErrLane) {
		t.Fatalf("resume in the default lane: err = %v, want ErrLane", err)
	}
	d := gate.Decide(context.Background(), plain, Attempt{Token: tk.Token, Nonce: "0", Visitor: who, Now: now})
	if d.Outcome != OutcomeInvalid || !errors.Is(d.Err, ErrLane) {
		t.Fatalf("decide in the default lane = %v %v, want invalid ErrLane", d.Outcome, d.Err)
	}
	if d := gate.Decide(context.Background(), vip, Attempt{Token: tk.Token, Nonce: "0", Visitor: who, Now: now}); d.Outcome != OutcomeAdmit {
		t.Fatalf("decide in its own lane = %v %v, want admit", d.Outcome, d.Err)
	}
}
