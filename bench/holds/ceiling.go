package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// ceilingBody is the ceiling's answer: 200 bytes of JSON, about a hold's.
var ceilingBody = []byte(`{"ok":true,"pad":"` + strings.Repeat("x", 200-len(`{"ok":true,"pad":""}`)) + `"}`)

// ceiling is what HTTP allows on this machine: a plain net/http server on
// loopback that reads each request and answers ceilingBody, driven by the
// same clients with the same requests as the seat API (a hold and its
// release, pass and Idempotency-Key included). The seat API's request
// rate over the ceiling's, measured in the same process, is the share of
// HTTP's ceiling the holds reach.
type ceiling struct {
	srv  *http.Server
	addr string
}

func newCeiling() (*ceiling, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &ceiling{addr: ln.Addr().String(), srv: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(ceilingBody)
	}), ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = c.srv.Serve(ln) }()
	return c, nil
}

func (c *ceiling) close() { _ = c.srv.Shutdown(context.Background()) }

// clients returns client n's set-up: its hold-and-release cycle on the
// ceiling, the same two requests as on the seat API (the session id and
// pass are stand-ins of the same length).
func (c *ceiling) clients(raw bool, t *httpTarget) func(n int) (cycle, error) {
	return func(n int) (cycle, error) {
		pass := strings.Repeat("p", t.passLen)
		session := strings.Repeat("s", t.sessionLen)
		do := newRawConn(c.addr).do
		if !raw {
			do = func(method, path, body, pass string) (int, []byte, error) {
				return t.doAt("http://"+c.addr, method, path, body, pass)
			}
		}
		return func(i int) (time.Duration, bool, error) {
			seat := seatOf(n, i)
			start := time.Now()
			status, body, err := do("POST", "/api/sessions/"+session+"/holds", `{"seats":["`+seat+`"]}`, pass)
			took := time.Since(start)
			if err != nil || status != http.StatusOK {
				return took, false, httpErr("ceiling hold", status, body, err)
			}
			if status, body, err := do("DELETE", "/api/sessions/"+session+"/holds/"+seat, "", pass); err != nil || status != http.StatusOK {
				return took, true, httpErr("ceiling release", status, body, err)
			}
			return took, true, nil
		}, nil
	}
}
