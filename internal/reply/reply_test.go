package reply

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

func TestJSON(t *testing.T) {
	tests := []struct {
		name         string
		cacheControl string
		v            any
		status       int
		wantStatus   int
		wantBody     string
		wantCache    string
	}{
		{"value", "", map[string]int{"a": 1}, 201, 201, `{"a":1}` + "\n", "no-store"},
		{"handler's cache policy kept", "public, max-age=5", []string{"x"}, 200, 200, `["x"]` + "\n", "public, max-age=5"},
		{"unencodable value is a clean 500", "", math.Inf(1), 200, 500, `{"error":{"code":"internal","message":"encoding the answer failed"}}` + "\n", "no-store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			if tt.cacheControl != "" {
				w.Header().Set("Cache-Control", tt.cacheControl)
			}
			JSON(w, tt.status, tt.v)
			if w.Code != tt.wantStatus || w.Body.String() != tt.wantBody {
				t.Fatalf("got %d %q, want %d %q", w.Code, w.Body.String(), tt.wantStatus, tt.wantBody)
			}
			h := w.Header()
			if h.Get("Content-Type") != "application/json" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cache-Control") != tt.wantCache {
				t.Fatalf("headers %v", h)
			}
			if h.Get("Content-Length") != itoa(len(tt.wantBody)) {
				t.Fatalf("Content-Length %q for %d bytes", h.Get("Content-Length"), len(tt.wantBody))
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestRawHeadersApart adds a value to each header Raw wrote, as a later
// handler may: the others keep theirs.
func TestRawHeadersApart(t *testing.T) {
	want := map[string]string{
		"Content-Type": "application/json", "Content-Length": "2",
		"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store",
	}
	for added := range want {
		t.Run(added, func(t *testing.T) {
			w := httptest.NewRecorder()
			Raw(w, http.StatusOK, []byte("{}"))
			h := w.Header()
			h.Add(added, "added")
			for name, v := range want {
				wantValues := []string{v}
				if name == added {
					wantValues = append(wantValues, "added")
				}
				if got := h.Values(name); !slices.Equal(got, wantValues) {
					t.Fatalf("after adding to %s: %s is %q, want %q", added, name, got, wantValues)
				}
			}
		})
	}
}

func TestFail(t *testing.T) {
	w := httptest.NewRecorder()
	Fail(w, http.StatusConflict, Error{Code: "seat_taken", Message: "gone", Seats: []string{"A-1-1-1"}})
	want := `{"error":{"code":"seat_taken","message":"gone","seats":["A-1-1-1"]}}` + "\n"
	if w.Code != 409 || w.Body.String() != want {
		t.Fatalf("got %d %q", w.Code, w.Body.String())
	}
}

func TestDecode(t *testing.T) {
	type body struct {
		Name string `json:"name"`
	}
	tests := []struct {
		name, body  string
		limit       int64
		wantErr     bool
		wantStatus  int
		wantMessage string
	}{
		{"good", `{"name":"x"}`, 100, false, 200, ""},
		{"not json", `{name`, 100, true, 400, "request body is not valid JSON"},
		{"unknown field named", `{"nome":"x"}`, 100, true, 400, `unknown field "nome"`},
		{"trailing data", `{"name":"x"} {}`, 100, true, 400, "trailing data after the JSON object"},
		{"too large", `{"name":"` + strings.Repeat("x", 200) + `"}`, 100, true, 413, "request body too large"},
		{"empty", ``, 100, true, 400, "request body is not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			r := httptest.NewRequest("POST", "/", strings.NewReader(tt.body))
			var v body
			err := Decode(w, r, tt.limit, &v)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr {
				if v.Name != "x" || w.Body.Len() != 0 {
					t.Fatalf("decoded %+v, answered %q", v, w.Body.String())
				}
				return
			}
			var got errorJSON
			if jerr := json.Unmarshal(w.Body.Bytes(), &got); jerr != nil || w.Code != tt.wantStatus || got.Error.Message != tt.wantMessage {
				t.Fatalf("got %d %q (%v), want %d %q", w.Code, w.Body.String(), jerr, tt.wantStatus, tt.wantMessage)
			}
			// Unmarshal answers the same for the same bytes (but has no limit).
			if tt.limit > int64(len(tt.body)) {
				w2 := httptest.NewRecorder()
				if Unmarshal(w2, []byte(tt.body), &v) == nil || w2.Code != w.Code || w2.Body.String() != w.Body.String() {
					t.Fatalf("Unmarshal answered %d %q", w2.Code, w2.Body.String())
				}
			}
		})
	}
}

// unread is a body that must not be read.
type unread struct{ t *testing.T }

func (u unread) Read([]byte) (int, error) {
	u.t.Error("the body was read")
	return 0, io.ErrUnexpectedEOF
}

// TestDeclaredLengthOverLimit: a body declared larger than the limit is
// answered 413 before any of it is read, by every reader of bodies.
func TestDeclaredLengthOverLimit(t *testing.T) {
	for name, read := range map[string]func(http.ResponseWriter, *http.Request) error{
		"Decode":   func(w http.ResponseWriter, r *http.Request) error { var v any; return Decode(w, r, 100, &v) },
		"ReadBody": func(w http.ResponseWriter, r *http.Request) error { _, err := ReadBody(w, r, 100, nil); return err },
		"Discard":  func(w http.ResponseWriter, r *http.Request) error { return Discard(w, r, 100) },
	} {
		for _, declared := range []int64{101, 999999999} {
			w := httptest.NewRecorder()
			r := httptest.NewRequest("POST", "/", unread{t})
			r.ContentLength = declared
			var tooBig *http.MaxBytesError
			if err := read(w, r); !errors.As(err, &tooBig) || w.Code != http.StatusRequestEntityTooLarge {
				t.Errorf("%s, Content-Length %d: %v, answered %d %s", name, declared, err, w.Code, w.Body)
			}
		}
	}
	w := httptest.NewRecorder()
	r := httptest.NewRequest("POST", "/", strings.NewReader("ok"))
	if err := Discard(w, r, 2); err != nil || w.Body.Len() != 0 {
		t.Fatalf("Discard of a body at the limit: %v, answered %d %s", err, w.Code, w.Body)
	}
}
