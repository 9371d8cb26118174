package proxy

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/fairgate/fairgate/proxy/pages"
)

func TestTicketJSONMatchesEncodingJSON(t *testing.T) {
	secs := 86400.0
	tiny := 1e-7
	full := ticketJSON{
		Room: "sale", Lane: "members", State: "queue", Token: "eyJ.a-b_c.d", Challenge: "7jWw",
		Difficulty: 16, NextAttempt: 1795441192869, RetryAfter: 2.366279471, EstimateSeconds: &secs,
		EstimateKnown: true, SaleStart: "2026-11-23T14:00:00Z", Outcome: "wait", Lang: "de",
		Message: "Sie sind <in> der \"Schlange\" & warten – 待って\u2028", Estimate: "etwa 24 Std.",
	}
	cases := map[string]ticketJSON{
		"every field":                 full,
		"empty":                       {},
		"optional fields absent":      {Room: "r", State: "open", RetryAfter: 0, Lang: "en", Message: "m", Estimate: "e"},
		"tiny and huge numbers":       {Room: "r", RetryAfter: 1e21, EstimateSeconds: &tiny},
		"negative next, invalid utf8": {Room: "\xff", NextAttempt: -5, Difficulty: -1, Message: "\x00\x1f"},
	}
	plain := full
	plain.tokenPlain = plainCookieText(plain.Token)
	if !plain.tokenPlain {
		t.Fatalf("%q is plain cookie text", plain.Token)
	}
	cases["plain token written as it is"] = plain
	for _, l := range pages.Locales() {
		tk := full
		tk.Lang, tk.Message, tk.Estimate = l.Name(), l.StateMessage("queue", "wait", ""), l.WaitText(secs, true)
		cases["language "+l.Name()] = tk
	}
	for name, tk := range cases {
		t.Run(name, func(t *testing.T) {
			want, err := json.Marshal(tk)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := tk.appendJSON(nil)
			if !ok || string(got) != string(want)+"\n" {
				t.Fatalf("appendJSON:\n%s\nencoding/json:\n%s", got, want)
			}
		})
	}
}

func TestWriteTicketUnencodableIsA500(t *testing.T) {
	w := httptest.NewRecorder()
	writeTicket(w, http.StatusTooManyRequests, &ticketJSON{RetryAfter: math.Inf(1)})
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500 as writeJSON answers", w.Code)
	}
}

func FuzzTicketJSON(f *testing.F) {
	f.Add("sale", "", "queue", "tok", "wait", "You're in line.", 2.5, 86400.0, int64(1795441192869))
	f.Add("sale", "vip", "queue", "eyJ.a-b_c.d", "early", "m", 1.0, 60.0, int64(1))
	f.Fuzz(func(t *testing.T, room, lane, state, token, outcome, message string, retry, est float64, next int64) {
		tk := ticketJSON{Room: room, Lane: lane, State: state, Token: token, Challenge: token, NextAttempt: next,
			RetryAfter: retry, EstimateSeconds: &est, Outcome: outcome, SaleStart: lane, Lang: state, Message: message, Estimate: outcome,
			tokenPlain: plainCookieText(token)}
		want, err := json.Marshal(tk)
		got, ok := tk.appendJSON(nil)
		if ok != (err == nil) || ok && string(got) != string(want)+"\n" {
			t.Fatalf("appendJSON = %s, %v; encoding/json: %s, %v", got, ok, want, err)
		}
	})
}
