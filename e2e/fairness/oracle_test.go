package main

import (
	"math"
	"testing"
	"time"
)

// clockFrom is a clock sampled every second from t0 for n seconds, running
// at speed from 0.
func clockFrom(n int, speed float64) []clockSample {
	var out []clockSample
	for i := range n {
		out = append(out, clockSample{At: at(float64(i)), S: speed * float64(i)})
	}
	return out
}

func TestReaches(t *testing.T) {
	samples := clockFrom(10, 0.5)
	for _, tc := range []struct {
		target float64
		want   float64 // seconds after t0; < 0: never
	}{{0, 0}, {-1, 0}, {1, 2}, {1.25, 2.5}, {4.5, 9}, {4.6, -1}} {
		got, ok := reaches(samples, tc.target)
		if ok != (tc.want >= 0) || ok && !got.Equal(at(tc.want)) {
			t.Errorf("reaches(%v) = %s, %v; want %v s", tc.target, got.Sub(t0), ok, tc.want)
		}
	}
}

// visitorAt is a lottery visitor whose threshold the clock passes at S =
// srv + threshold: v = 1 − e^(−threshold).
func visitorAt(id, login, strategy string, srv, threshold, admitted float64, checkpoints map[string][]float64) *visitor {
	v := admittedVisitor(id, login, strategy, -1, 0, admitted)
	v.Entry, v.Lottery = &srv, 1-math.Exp(-threshold)
	for outcome, cps := range checkpoints {
		for _, c := range cps {
			v.record(event{Path: "/admit", Status: 429, Outcome: outcome, Nxt: at(c).UnixMilli()})
		}
	}
	return v
}

func TestRuleOracle(t *testing.T) {
	samples := clockFrom(60, 1) // S = seconds after t0
	vs := []*visitor{
		// Eligible at 10 s; its next checkpoint is 12 s; in at 13 s: 1 s after.
		visitorAt("a", "la", honest, 0, 10, 13, map[string][]float64{"deferred": {6, 12, 18}}),
		// Eligible at 25 s (entered at S 5); a busy slot at 26 s is not a
		// checkpoint: the rule's is 30 s, and it went in at 27 s, 3 s early.
		visitorAt("b", "lb", poll, 5, 20, 27, map[string][]float64{"deferred": {20, 30}, "busy": {26}}),
		// Its twin's checkpoints are the login's: the rule's is 30 s.
		visitorAt("c", "lb", honest, 5, 20, 31, nil),
		// Eligible past the sampled clock: unknown.
		visitorAt("d", "ld", honest, 0, 100, 40, map[string][]float64{"deferred": {30}}),
		// No checkpoint seen after eligibility: unknown.
		visitorAt("e", "le", late, 0, 10, 11, map[string][]float64{"deferred": {5}}),
	}
	rows := map[string]ruleRow{}
	for _, r := range ruleOracle(vs, samples) {
		rows[r.Strategy] = r
	}
	if h := rows[honest]; h.Judged != 2 || h.Unknown != 1 || h.Min != time.Second || h.Max != time.Second || h.Before != 0 {
		t.Errorf("honest row %+v, want two judged 1 s after the rule, one unknown", h)
	}
	if p := rows[poll]; p.Judged != 1 || p.Median != -3*time.Second || p.Before != 1 {
		t.Errorf("poll row %+v, want one judged 3 s before the rule", p)
	}
	if l := rows[late]; l.Judged != 0 || l.Unknown != 1 {
		t.Errorf("late row %+v, want one unknown", l)
	}
}

func TestReadClaims(t *testing.T) {
	for _, tc := range []struct {
		name, token string
		want        tokenClaims
	}{
		{"lottery", fakeToken(`{"srv":12.5}`), tokenClaims{Srv: 12.5}},
		{"fifo pre-queue", fakeToken(`{"pos":-3,"srv":0}`), tokenClaims{Pos: -3}},
		{"not a token", "garbage", tokenClaims{}},
	} {
		got := readClaims(tc.token)
		if got.Pos != tc.want.Pos || got.Srv != tc.want.Srv {
			t.Errorf("%s: pos %d srv %v, want %d %v", tc.name, got.Pos, got.Srv, tc.want.Pos, tc.want.Srv)
		}
	}
}
