package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestAdmissionHook(t *testing.T) {
	var mode atomic.Value
	var calls atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get(PassHeader) == "" {
			t.Error("hook called without the pass")
		}
		switch mode.Load().(string) {
		case "ok":
			fmt.Fprint(w, `{"session":"s-42"}`)
		case "full":
			w.WriteHeader(http.StatusConflict)
		case "down":
			w.WriteHeader(http.StatusInternalServerError)
		case "slow":
			time.Sleep(300 * time.Millisecond)
		}
	}))
	defer hook.Close()

	for _, tt := range []struct {
		mode, policy string
		admitted     bool
		session      string
	}{
		{"ok", "closed", true, "s-42"},
		{"full", "closed", false, ""},
		{"full", "open", false, ""}, // 409 is an answer, not a failure: never admits
		{"down", "closed", false, ""},
		{"down", "open", true, ""},
		{"slow", "closed", false, ""},
	} {
		t.Run(tt.mode+"/"+tt.policy, func(t *testing.T) {
			mode.Store(tt.mode)
			e := newEnv(t, Config{Room: "sale", State: "open", Hook: &Hook{URL: hook.URL, OnFailure: tt.policy, Timeout: Duration(100 * time.Millisecond)}}, nil)
			tk := e.ticket()
			resp, body := e.do("POST", "/_fairgate/admit", `{"nonce":"`+solveFor(t, tk)+`"}`)
			if tt.admitted != (resp.StatusCode == 200) {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if !tt.admitted {
				var back ticketJSON
				_ = json.Unmarshal(body, &back)
				if resp.StatusCode != 429 || back.Token == "" {
					t.Fatalf("turned away: %d %s", resp.StatusCode, body)
				}
				// The same token may try again: it was released, not spent.
				mode.Store("ok")
				e.clock.Set(time.UnixMilli(back.NextAttempt))
				resp, body = e.do("POST", "/_fairgate/admit", `{"nonce":"`+solveFor(t, back)+`"}`)
				if resp.StatusCode != 200 {
					t.Fatalf("retry after the hook recovered: %d %s", resp.StatusCode, body)
				}
				return
			}
			var a admitResponse
			_ = json.Unmarshal(body, &a)
			claims, err := e.gw.gate.VerifyPass("sale", a.Pass, e.clock.Now())
			if err != nil || claims.Ses != tt.session {
				t.Fatalf("pass %+v %v, want session %q", claims, err, tt.session)
			}
		})
	}
}
