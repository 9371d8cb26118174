package drive

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestDo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Seen", r.Method+" "+r.Header.Get("Accept")+" "+r.Header.Get("Cookie")+" "+string(b))
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, strings.Repeat("x", MaxBody+10))
	}))
	defer srv.Close()
	status, body, h, err := Do(context.Background(), srv.Client(), "POST", srv.URL, []byte("b"), "c=1")
	if err != nil || status != http.StatusAccepted || len(body) != MaxBody || h.Get("X-Seen") != "POST application/json c=1 b" {
		t.Fatalf("Do = %d, %d bytes, %q, %v", status, len(body), h.Get("X-Seen"), err)
	}
	srv.Close()
	if _, _, h, err := Do(context.Background(), srv.Client(), "GET", srv.URL, nil, ""); err == nil || h == nil {
		t.Fatalf("Do to a closed server: headers %v, error %v", h, err)
	}
}

func TestSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan struct{})
	go func() { Sleep(ctx, time.Hour); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Sleep outlived its context")
	}
}
