package gateway

import (
	"encoding/base64"
	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/fairgate/fairgate/internal/testhttp"
	"github.com/fairgate/fairgate/room"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestMetricsRegistered(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale"}}, nil)
	e.ticket()
	n, err := testutil.GatherAndCount(e.reg, "fairgate_tokens_issued_total", "fairgate_clock_speed", "fairgate_bucket_level", "fairgate_room_state")
	if err != nil || n < 8 {
		t.Fatalf("metrics: %d series, %v", n, err)
	}
	// A reload registers the same room again without error and keeps counting.
	gw2, err := New(Config{Config: room.Config{Room: "sale", Keys: testKeys}}, e.gw.Room(), Options{Now: e.clock.Now, Registerer: e.reg})
	if err != nil {
		t.Fatalf("second gateway for the room: %v", err)
	}
	defer gw2.Close()
	if v := testutil.ToFloat64(gw2.metrics.issued); v != 1 {
		t.Fatalf("issued after reload: %v", v)
	}
}

// TestAnswersCountedAcrossGateways: the series resolved once count into
// the labelled family, across the gateways of one room, and an answer
// outside answerSeries is counted too.
func TestAnswersCountedAcrossGateways(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale"}}, nil)
	gw2, err := New(Config{Config: room.Config{Room: "sale", Keys: testKeys}}, e.gw.Room(), Options{Now: e.clock.Now, Registerer: e.reg})
	if err != nil {
		t.Fatal(err)
	}
	defer gw2.Close()
	e.gw.metrics.answered(endpointAdmit, "wait", "wait")
	gw2.metrics.answered(endpointAdmit, "wait", "wait")
	e.gw.metrics.answered(endpointAdmit, "early", "early")
	gw2.metrics.answered(endpointAdmit, "outcome(9)", "unavailable")
	for k, want := range map[answerKey]float64{
		{endpointAdmit, "wait", "wait"}: 2, {endpointAdmit, "early", "early"}: 1,
		{endpointAdmit, "admit", "admitted"}: 0, {endpointAdmit, "outcome(9)", "unavailable"}: 1,
	} {
		if got := testutil.ToFloat64(e.gw.metrics.attempts.WithLabelValues(k.endpoint, k.outcome, k.reason)); got != want {
			t.Errorf("attempts%v = %v, want %v", k, got, want)
		}
	}
}

// TestEveryAnswerCountedByReason sends the token and admit endpoints one
// request of each kind and reads admission_attempts_total from the
// registry: each answer is counted once under its reason, and a visitor
// the admission hook turns away is not counted as admitted.
func TestEveryAnswerCountedByReason(t *testing.T) {
	secret := []byte("site-login-secret-0123456789abcdef")
	var refuse atomic.Bool
	hook := hookServer(t, func(*http.Request) bool { return refuse.Load() })
	e := newEnv(t, Config{
		Config:   room.Config{Room: "sale", State: "open", Difficulty: intp(8)},
		Hook:     &Hook{URL: hook},
		Identity: &Identity{Header: "Authorization", Algorithm: "HS256", Key: base64.StdEncoding.EncodeToString(secret)},
	}, nil)
	badLogin := []string{"Authorization", "Bearer not-a-login"}
	big := strings.Repeat("x", 5000) // over max_body_bytes, 4096
	admit := func(body string, header ...string) int {
		resp, _ := e.do("POST", "/_fairgate/admit", body, header...)
		return resp.StatusCode
	}
	tk := e.ticket()
	wrong := 0
	for tokens.VerifyWork(tk.Challenge, tk.Difficulty, strconv.Itoa(wrong)) == nil {
		wrong++
	}
	forged := tk.Token[:len(tk.Token)-2] + "AA"
	if forged == tk.Token {
		forged = tk.Token[:len(tk.Token)-2] + "BB"
	}
	noJar := func(body string) int {
		resp, _ := testhttp.Do(t, nil, testhttp.NewRequest(t, "POST", e.srv.URL+"/_fairgate/admit", body))
		return resp.StatusCode
	}
	steps := []struct {
		name             string
		send             func() int
		status           int
		endpoint, reason string
		outcome          string
	}{
		{"token kept", func() int { r, _ := e.do("POST", "/_fairgate/token", ""); return r.StatusCode }, 200, endpointToken, "kept", "issued"},
		{"token body too large", func() int { r, _ := e.do("POST", "/_fairgate/token", big); return r.StatusCode }, 413, endpointToken, "body_too_large", "invalid"},
		{"token bad login", func() int { r, _ := e.do("POST", "/_fairgate/token", "", badLogin...); return r.StatusCode }, 401, endpointToken, "login", "invalid"},
		{"malformed body", func() int { return admit(`{"nonce":`) }, 400, endpointAdmit, "body_malformed", "invalid"},
		{"unknown field", func() int { return admit(`{"nonce":"1","seat":"A1"}`) }, 400, endpointAdmit, "body_unknown_field", "invalid"},
		{"body too large", func() int { return admit(big) }, 413, endpointAdmit, "body_too_large", "invalid"},
		{"no token", func() int { return noJar(`{"nonce":"1"}`) }, 400, endpointAdmit, "no_token", "invalid"},
		{"bad login", func() int { return admit(`{"nonce":"1"}`, badLogin...) }, 401, endpointAdmit, "login", "invalid"},
		{"forged token", func() int { return admit(`{"nonce":"1","token":"` + forged + `"}`) }, 401, endpointAdmit, "token_invalid", "invalid"},
		{"bad proof of work", func() int { return admit(`{"nonce":"` + strconv.Itoa(wrong) + `"}`) }, 403, endpointAdmit, "pow", "invalid"},
		{"hook refuses", func() int { refuse.Store(true); return admit(`{"nonce":"` + solveFor(t, tk) + `"}`) }, 429, endpointAdmit, "hook_refused", "deferred"},
	}
	for _, s := range steps {
		if got := s.send(); got != s.status {
			t.Fatalf("%s: %d, want %d", s.name, got, s.status)
		}
	}
	want := map[answerKey]float64{{endpointToken, "issued", "new"}: 1} // e.ticket
	for _, s := range steps {
		want[answerKey{s.endpoint, s.outcome, s.reason}]++
	}
	got := map[answerKey]float64{}
	families, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "fairgate_admission_attempts_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			var k answerKey
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "endpoint":
					k.endpoint = l.GetValue()
				case "outcome":
					k.outcome = l.GetValue()
				case "reason":
					k.reason = l.GetValue()
				}
			}
			if v := m.GetCounter().GetValue(); v != 0 {
				got[k] = v
			}
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("admission_attempts_total:\n got %v\nwant %v", got, want)
	}
	if n := testutil.ToFloat64(e.gw.metrics.admissions); n != 0 {
		t.Errorf("admissions_total %v after the hook refused the only admission", n)
	}
}

// TestHeldAndWaitMetrics: answers given instead of the site are counted by
// kind, and admission records the time since entry.
func TestHeldAndWaitMetrics(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale", Tau: Duration(10 * time.Second), FixedSpeed: true}}, nil)
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
