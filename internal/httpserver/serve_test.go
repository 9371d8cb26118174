package httpserver

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"
)

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// TestServe: both servers answer until ctx ends, then Serve returns nil;
// a server that cannot serve stops the others and is the error; a request
// still running at the end of the grace is ErrNotDrained.
func TestServe(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	t.Run("until ctx ends", func(t *testing.T) {
		a, b := listen(t), listen(t)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- Serve(ctx, time.Second, Serving{Server: New(ok, Defaults), Listener: a}, Serving{Server: New(ok, Defaults), Listener: b})
		}()
		for _, ln := range []net.Listener{a, b} {
			resp, err := http.Get("http://" + ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		cancel()
		if err := wait(t, done); err != nil {
			t.Fatalf("Serve: %v", err)
		}
	})
	t.Run("a server fails", func(t *testing.T) {
		good, bad := listen(t), listen(t)
		_ = bad.Close()
		done := make(chan error, 1)
		go func() {
			done <- Serve(context.Background(), time.Second, Serving{Server: New(ok, Defaults), Listener: good}, Serving{Server: New(ok, Defaults), Listener: bad})
		}()
		if err := wait(t, done); err == nil || errors.Is(err, ErrNotDrained) {
			t.Fatalf("Serve on a closed listener: %v", err)
		}
	})
	t.Run("not drained", func(t *testing.T) {
		ln := listen(t)
		started, release := make(chan struct{}), make(chan struct{})
		defer close(release)
		slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(started)
			<-release
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- Serve(ctx, 20*time.Millisecond, Serving{Server: New(slow, Defaults), Listener: ln}) }()
		go func() {
			if resp, err := http.Get("http://" + ln.Addr().String()); err == nil {
				resp.Body.Close()
			}
		}()
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("the request never reached the handler")
		}
		cancel()
		if err := wait(t, done); !errors.Is(err, ErrNotDrained) {
			t.Fatalf("Serve with a request running past the grace: %v", err)
		}
	})
}

func wait(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
		return nil
	}
}
