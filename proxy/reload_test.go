package proxy

import (
	"errors"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// TestReloadAppliesEveryRoomOption guards finding 2 of issue 14: each room
// setting a reload changes takes effect once the new gateway's config is
// applied, and none before.
func TestReloadAppliesEveryRoomOption(t *testing.T) {
	e := newEnv(t, Config{Room: "sale", State: "queue", Rate: 5, Tau: Duration(time.Minute), FixedSpeed: true, LedgerSize: 10}, nil)
	sh := e.gw.Room()
	next := Config{Room: "sale", Keys: testKeys, State: "paused", Rate: 7, Burst: 9, Difficulty: intp(6),
		Tau: Duration(4 * time.Second), FixedSpeed: true, LedgerSize: 1}
	gw2, err := New(next, sh, Options{Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer gw2.Close()
	now := e.clock.Now()
	if st := sh.Status(now); st.State != "queue" || st.Rate != 5 || st.Difficulty != 4 {
		t.Fatalf("New changed the room before ApplyConfig: %+v", st)
	}
	if err := gw2.ApplyConfig(); err != nil {
		t.Fatal(err)
	}
	st := sh.Status(now)
	if st.State != "paused" || st.Rate != 7 || st.Burst != 9 || st.Difficulty != 6 {
		t.Fatalf("after ApplyConfig: %+v", st)
	}
	if err := sh.Room.SetState("queue", time.Time{}, now); err != nil {
		t.Fatal(err)
	}
	if speed := sh.Status(now).ClockSpeed; speed != 0.25 {
		t.Fatalf("tau 4s, fixed speed: clock speed %v, want 0.25", speed)
	}
	// ledger_size 1: a second used token does not fit.
	used := admission.Place{State: admission.PlaceUsed}
	if _, _, err := sh.Ledger.Hold(t.Context(), "a", used, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := sh.Ledger.Hold(t.Context(), "b", used, now.Add(time.Hour)); !errors.Is(err, admission.ErrLedgerFull) {
		t.Fatalf("ledger_size 1 took a second place: %v", err)
	}
}

// TestHeldAndWaitMetrics guards finding 8 of issue 14: answers given
// instead of the site are counted by kind, and admission records the time
// since entry.
func TestHeldAndWaitMetrics(t *testing.T) {
	e := newEnv(t, Config{Room: "sale", Tau: Duration(10 * time.Second), FixedSpeed: true}, nil)
	e.do("GET", "/shop", "", "Accept", "text/html")
	e.do("GET", "/shop", "", "Accept", "application/json")
	e.do("GET", "/shop", "", "Accept", "application/json")
	start := e.clock.Now()
	e.admitted()
	waited := e.clock.Now().Sub(start).Seconds()
	if err := e.gw.Room().Room.SetState("closed", time.Time{}, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	e.client.Jar = nil // a visitor without the pass
	e.do("GET", "/shop", "", "Accept", "text/html")
	held := e.gw.metrics.held
	for answer, want := range map[string]float64{"waiting_page": 1, "waiting_json": 2, "closed": 1} {
		if got := testutil.ToFloat64(held.WithLabelValues(answer)); got != want {
			t.Errorf("held_requests_total{answer=%q} = %v, want %v", answer, got, want)
		}
	}
	var m dto.Metric
	if err := e.gw.metrics.waited.Write(&m); err != nil {
		t.Fatal(err)
	}
	h := m.GetHistogram()
	if h.GetSampleCount() != 1 || h.GetSampleSum() < waited-1 || h.GetSampleSum() > waited+1 {
		t.Fatalf("wait_seconds: %d samples, sum %v; the visitor waited %v s", h.GetSampleCount(), h.GetSampleSum(), waited)
	}
}
