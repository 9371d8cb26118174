package httpwire

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/fairgate/fairgate/internal/reply"
)

func TestTicketMatchesEncodingJSON(t *testing.T) {
	secs := 86400.0
	tiny := 1e-7
	full := Ticket{
		Room: "sale", Lane: "members", State: "queue", Token: "eyJ.a-b_c.d", Challenge: "7jWw",
		Difficulty: 16, NextAttempt: 1795441192869, RetryAfter: 2.366279471, EstimateSeconds: &secs,
		EstimateKnown: true, SaleStart: "2026-11-23T14:00:00Z", Outcome: "wait", Lang: "de",
		Message: "Sie sind <in> der \"Schlange\" & warten – 待って\u2028", Estimate: "etwa 24 Std.",
	}
	cases := map[string]Ticket{
		"every field":                 full,
		"empty":                       {},
		"optional fields absent":      {Room: "r", State: "open", RetryAfter: 0, Lang: "en", Message: "m", Estimate: "e"},
		"tiny and huge numbers":       {Room: "r", RetryAfter: 1e21, EstimateSeconds: &tiny},
		"negative next, invalid utf8": {Room: "\xff", NextAttempt: -5, Difficulty: -1, Message: "\x00\x1f"},
	}
	plain := full
	plain.TokenPlain = PlainCookieText(plain.Token)
	if !plain.TokenPlain {
		t.Fatalf("%q is plain cookie text", plain.Token)
	}
	cases["plain token written as it is"] = plain
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

// TestWriteTicket: the answer is reply.JSON's, headers and bytes, with
// the hand-written code on or off; a number JSON cannot hold is its 500.
func TestWriteTicket(t *testing.T) {
	tk := &Ticket{TokenPlain: true}
	v := reflect.ValueOf(tk).Elem()
	for i, f := range reflect.VisibleFields(v.Type()) { // every field set
		switch fv := v.FieldByIndex(f.Index); fv.Kind() {
		case reflect.String:
			fv.SetString(f.Name)
		case reflect.Int, reflect.Int64:
			fv.SetInt(int64(1000 + i))
		case reflect.Float64:
			fv.SetFloat(float64(i) + 0.25)
		case reflect.Bool:
			fv.SetBool(true)
		case reflect.Pointer:
			fv.Set(reflect.New(f.Type.Elem()))
		}
	}
	bothPaths(t, func(t *testing.T) {
		for _, tt := range []struct {
			ticket *Ticket
			status int
		}{
			{tk, http.StatusTooManyRequests},
			{&Ticket{RetryAfter: math.Inf(1)}, http.StatusInternalServerError},
		} {
			got, want := httptest.NewRecorder(), httptest.NewRecorder()
			WriteTicket(got, http.StatusTooManyRequests, tt.ticket)
			reply.JSON(want, http.StatusTooManyRequests, tt.ticket)
			if got.Code != tt.status || got.Code != want.Code || got.Body.String() != want.Body.String() ||
				!reflect.DeepEqual(got.Header(), want.Header()) {
				t.Errorf("WriteTicket: %d %v %s\nreply.JSON: %d %v %s", got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
			}
		}
	})
}

func FuzzTicketJSON(f *testing.F) {
	f.Add("sale", "", "queue", "tok", "wait", "You're in line.", 2.5, 86400.0, int64(1795441192869))
	f.Add("sale", "vip", "queue", "eyJ.a-b_c.d", "early", "m", 1.0, 60.0, int64(1))
	f.Fuzz(func(t *testing.T, room, lane, state, token, outcome, message string, retry, est float64, next int64) {
		tk := Ticket{Room: room, Lane: lane, State: state, Token: token, Challenge: token, NextAttempt: next,
			RetryAfter: retry, EstimateSeconds: &est, Outcome: outcome, SaleStart: lane, Lang: state, Message: message, Estimate: outcome,
			TokenPlain: PlainCookieText(token)}
		want, err := json.Marshal(tk)
		got, ok := tk.appendJSON(nil)
		if ok != (err == nil) || ok && string(got) != string(want)+"\n" {
			t.Fatalf("appendJSON = %s, %v; encoding/json: %s, %v", got, ok, want, err)
		}
	})
}
