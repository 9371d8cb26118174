package testhttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestDo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Seen", r.Method+" "+r.URL.Path+" "+r.Header.Get("X-A")+" "+r.Header.Get("X-B")+" "+string(b))
		w.WriteHeader(http.StatusTeapot)
		io.WriteString(w, "answer")
	}))
	defer srv.Close()
	for _, client := range []*http.Client{nil, srv.Client()} {
		resp, body := Do(t, client, NewRequest(t, "POST", srv.URL+"/p", "body"), "X-A", "1", "X-B", "2", "X-odd")
		if resp.StatusCode != http.StatusTeapot || string(body) != "answer" || resp.Header.Get("X-Seen") != "POST /p 1 2 body" {
			t.Errorf("Do = %d %q, the server saw %q", resp.StatusCode, body, resp.Header.Get("X-Seen"))
		}
	}
}
