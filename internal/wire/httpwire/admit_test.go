package httpwire

import (
	"net/http/httptest"
	"testing"

	"github.com/fairgate/fairgate/internal/reply"
)

// general is what encoding/json (the path every other body takes) reads.
func general(body string) (AdmitRequest, bool) {
	var req AdmitRequest
	return req, reply.Unmarshal(httptest.NewRecorder(), []byte(body), &req) == nil
}

func TestParseAdmit(t *testing.T) {
	tests := []struct {
		body string
		fast bool
	}{
		{`{"nonce":"0"}`, true},
		{`{"nonce":"123456"}`, true},
		{`{"nonce":"42","return":"/shop/seats?event=final-2026&x=ü"}`, true},
		{`{"nonce":"42","return":""}`, true},
		{`{"nonce":""}`, false},
		{`{"nonce":"12a"}`, false},
		{`{"nonce":"123456789012345678901"}`, false},
		{`{"nonce":"1"} `, false},
		{` {"nonce":"1"}`, false},
		{`{"nonce":"1","return":"/a\"b"}`, false},
		{`{"nonce":"1","return":"/a\u003cb"}`, false},
		{`{"nonce":"1","return":"/\xff"}`, false},
		{`{"nonce":"1","token":"a.b.c"}`, false},
		{`{"nonce":"1","return":"/"}{}`, false},
		{`{"nonce":"1"`, false},
		{`{"nonce":1}`, false},
	}
	for _, tt := range tests {
		got, fast := ParseAdmit([]byte(tt.body))
		if fast != tt.fast {
			t.Errorf("ParseAdmit(%s) fast = %v, want %v", tt.body, fast, tt.fast)
		}
		if want, ok := general(tt.body); fast && (!ok || got != want) {
			t.Errorf("ParseAdmit(%s) = %+v; encoding/json reads %+v, %v", tt.body, got, want, ok)
		}
	}
}

// FuzzParseAdmit: whatever the fast path accepts, encoding/json reads the
// same, so a body means one thing whichever path reads it.
func FuzzParseAdmit(f *testing.F) {
	f.Add(`{"nonce":"7"}`)
	f.Add(`{"nonce":"7","return":"/x?y=1"}`)
	f.Fuzz(func(t *testing.T, body string) {
		got, fast := ParseAdmit([]byte(body))
		if !fast {
			return
		}
		if want, ok := general(body); !ok || got != want {
			t.Fatalf("ParseAdmit(%q) = %+v; encoding/json reads %+v, %v", body, got, want, ok)
		}
	})
}
