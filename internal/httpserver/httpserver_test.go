package httpserver

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestSlowClientsAreCutOff: a body trickled after its headers, headers
// that never end, and an idle kept-alive connection each lose their
// connection, and the goroutine serving it, at the timeout.
func TestSlowClientsAreCutOff(t *testing.T) {
	const limit = 150 * time.Millisecond
	bodyDone := make(chan error, 1)
	srv := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		bodyDone <- err
	}), Timeouts{Header: limit, Read: limit, Idle: limit})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	for _, tt := range []struct {
		name, send string
		handler    bool // the handler runs and its body read must fail
	}{
		{"slow body", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nabc", true},
		{"slow headers", "GET / HTTP/1.1\r\nHost: x\r\n", false},
		{"idle", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprint(conn, tt.send)
			// Bound the test, not the server: the server must hang up long
			// before this.
			_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			start := time.Now()
			_, err = io.Copy(io.Discard, bufio.NewReader(conn))
			if err != nil {
				t.Fatalf("the server held the connection: %v", err)
			}
			if held := time.Since(start); held < limit/2 {
				t.Fatalf("cut off after %v, long before the %v timeout", held, limit)
			}
			if tt.handler {
				select {
				case err := <-bodyDone:
					if err == nil {
						t.Fatal("the handler read a whole body that was never sent")
					}
				case <-time.After(20 * time.Second):
					t.Fatal("the handler is still reading the slow body")
				}
			}
		})
	}
}
