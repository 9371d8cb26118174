package replay

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestAdmitAsksAgainAfterA429: a 429 is asked again after its
// retry_after, up to Tries in all; the first other answer is returned.
func TestAdmitAsksAgainAfterA429(t *testing.T) {
	for _, tc := range []struct {
		name       string
		limited    int // how many 429s before a 200
		wantStatus int
		wantAsked  int64
	}{
		{"no 429", 0, http.StatusOK, 1},
		{"two 429s", 2, http.StatusOK, 3},
		{"429s to the end", 10, http.StatusTooManyRequests, Tries},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != "/_fairgate/admit" {
					http.NotFound(w, r)
					return
				}
				if asked.Add(1) <= int64(tc.limited) {
					w.WriteHeader(http.StatusTooManyRequests)
					fmt.Fprint(w, `{"retry_after":0.001}`)
					return
				}
				fmt.Fprint(w, `{"pass":"p"}`)
			}))
			defer srv.Close()
			status, body, err := Admit(context.Background(), srv.Client(), srv.URL, []byte(`{}`))
			if err != nil || status != tc.wantStatus || asked.Load() != tc.wantAsked {
				t.Fatalf("Admit = %d %s %v after %d asks; want %d after %d", status, body, err, asked.Load(), tc.wantStatus, tc.wantAsked)
			}
		})
	}
}

func TestAdmitStopsWithItsContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"retry_after":3600}`)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Admit(ctx, srv.Client(), srv.URL, []byte(`{}`)); err == nil {
		t.Fatal("Admit with a cancelled context answered")
	}
}

func TestAgain(t *testing.T) {
	enc := base64.RawURLEncoding.EncodeToString
	passWith := func(id string) string {
		return enc([]byte(`{"alg":"HS256"}`)) + "." + enc([]byte(`{"jti":"`+id+`"}`)) + ".sig"
	}
	for _, tc := range []struct {
		answer, firstID string
		want            bool
	}{
		{`{"pass":"` + passWith("p-1") + `"}`, "p-1", false},
		{`{"pass":"` + passWith("p-2") + `"}`, "p-1", true},
		{`{"pass":"` + passWith("p-1") + `"}`, "", true},
		{`{}`, "p-1", true},
	} {
		if got := Again([]byte(tc.answer), tc.firstID); got != tc.want {
			t.Errorf("Again(%s, %q) = %v, want %v", tc.answer, tc.firstID, got, tc.want)
		}
	}
}
