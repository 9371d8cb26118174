package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	fgetag "github.com/fairgate/fairgate/internal/etag"
)

// FuzzWriteBodies sends arbitrary JSON bodies to every write of a live
// session: whatever the body, the answer is a clear 2xx or 4xx, never a
// 5xx or a panic.
func FuzzWriteBodies(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `{"seats":["A-1-1-1"]}`, `{"seats":[]}`, `{"best":{"count":2,"sections":["A","A"]}}`,
		`{"best":{"count":-1}}`, `{"seats":["A-1-1-1"],"best":{"count":1}}`, `{"payment_ref":"p"}`,
		`{"seats":[null]}`, `[1,2]`, `{"seats":"A"}`, `{"event":"ev"}`, `{"unknown":1}`, `{} {}`, `{"seats":["A-1-1-1"]}x`, `{"seats":["` + strings.Repeat("Z", 300) + `"]}`,
	} {
		f.Add("holds", seed)
		f.Add("confirm", seed)
		f.Add("checkout", seed)
	}
	e := newEnv(f)
	alice, s := e.visitor("alice")
	f.Fuzz(func(t *testing.T, endpoint, body string) {
		if endpoint != "holds" && endpoint != "confirm" && endpoint != "checkout" {
			endpoint = "holds"
		}
		call := *e
		call.t = t
		code, answer := call.do("POST", "/api/sessions/"+s+"/"+endpoint, body, alice)
		if code >= 500 || code < 200 {
			t.Fatalf("%s %q: %d %s", endpoint, body, code, answer)
		}
	})
}

// FuzzIfNoneMatch: an arbitrary If-None-Match gets the event (200) or, only
// when it names the current ETag (internal/etag's rule: "*", or the tag in
// its list, weakly compared), 304.
func FuzzIfNoneMatch(f *testing.F) {
	e := newEnv(f)
	resp, err := http.Get(e.srv.URL + "/api/events/ev")
	if err != nil {
		f.Fatal(err)
	}
	resp.Body.Close()
	etag := resp.Header.Get("ETag")
	for _, seed := range []string{etag, "*", `W/` + etag, `"x"`, "", etag + ", " + etag, strings.Repeat(`"`, 100)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, inm string) {
		req, err := http.NewRequest("GET", e.srv.URL+"/api/events/ev", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("If-None-Match", inm)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Skip("not a sendable header value")
		}
		resp.Body.Close()
		switch {
		case (resp.StatusCode == http.StatusNotModified) != fgetag.Matches(req.Header.Get("If-None-Match"), etag):
			t.Fatalf("%d for If-None-Match %q (ETag %s)", resp.StatusCode, inm, etag)
		case resp.StatusCode != http.StatusNotModified && resp.StatusCode != http.StatusOK:
			t.Fatalf("If-None-Match %q: %d", inm, resp.StatusCode)
		}
	})
}

// FuzzPlainSeats: whenever plainSeats reads a hold's body, encoding/json
// (as the API decodes a body: unknown fields refused, nothing after the
// object) reads the same seats from it, and nothing else.
func FuzzPlainSeats(f *testing.F) {
	for _, seed := range []string{
		`{"seats":["A-1-1-1"]}`, `{"seats":["A-1-1-1","A-1-1-2"]}` + "\n", `{"seats":[]}`, `{"seats":[""]}`,
		`{"seats":["A\"1"]}`, `{"seats":["A\\u0041"]}`, `{"seats":["é"]}`, `{"seats":["A"],}`, `{"seats":["A"]} x`,
		`{"seats":["A"]}{}`, `{"seats":["A",]}`, `{"seats":["A" ,"B"]}`, `{"seats":["A"]`, `{"seats":["A`, "{\"seats\":[\"A\x01\"]}",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		got, ok := plainSeats([]byte(body))
		if !ok {
			return
		}
		var want holdBody
		dec := json.NewDecoder(strings.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&want); err != nil || dec.More() {
			t.Fatalf("plainSeats read %q from %q, which encoding/json refuses (%v)", got, body, err)
		}
		if want.Best != nil || !slices.Equal(got, want.Seats) {
			t.Fatalf("plainSeats read %q from %q, encoding/json %+v", got, body, want)
		}
	})
}
