package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/fairgate/fairgate/internal/reply"
	"github.com/fairgate/fairgate/internal/wire"
	"github.com/fairgate/fairgate/internal/wire/httpwire"
)

// BenchmarkWire is what each piece of internal/wire pays its endpoint:
// every endpoint and every piece, on the endpoint's own bytes, with the
// hand-written code (wire=fast) and with the standard library (wire=std),
// alternated in one run so that the machine's load falls on both alike.
// A piece's share is its std time less its fast time, over its
// endpoint's fast time, in CPU time per operation (cpu-ns/op).
//
//	go test -run '^$' -bench '^BenchmarkWire$' -benchmem -benchtime 0.3s -cpu 1 -count 6 ./gateway
func BenchmarkWire(b *testing.B) {
	gw, clock, token, nonce := pollEnv(b)
	cookie := "fairgate_wait_sale=" + token
	body := []byte(`{"nonce":"` + nonce + `"}`)
	codec := gw.door.Codec()
	claims, err := codec.ParseWait(token, "sale", clock.Now())
	if err != nil {
		b.Fatal(err)
	}
	clock.Set(claims.NextAttempt())
	poll := browserRequest("/_fairgate/admit", string(body), cookie)
	rec := httptest.NewRecorder()
	gw.ServeHTTP(rec, poll())
	var ticket ticketJSON // the poll's answer, as the poll writes it
	if err := json.Unmarshal(rec.Body.Bytes(), &ticket); err != nil {
		b.Fatal(err)
	}
	ticket.TokenPlain = true
	passGW, passReq, next := passedEnv(b)
	pollReq := poll()
	w := &discardWriter{h: http.Header{}}

	cases := []struct {
		name string
		f    func(b *testing.B)
	}{
		{"endpoint=poll", func(b *testing.B) { benchServe(b, gw, http.StatusTooManyRequests, poll) }},
		{"endpoint=token-new", func(b *testing.B) {
			benchServe(b, gw, http.StatusOK, browserRequest("/_fairgate/token", "", ""))
		}},
		{"endpoint=token-refresh", func(b *testing.B) {
			benchServe(b, gw, http.StatusOK, browserRequest("/_fairgate/token", "", cookie))
		}},
		{"endpoint=passed", func(b *testing.B) { loop(b, func() { passGW.Handle(w, passReq, next) }) }},
		{"piece=claims-decode", func(b *testing.B) {
			loop(b, func() {
				if _, err := codec.ParseWait(token, "sale", clock.Now()); err != nil {
					b.Fatal(err)
				}
			})
		}},
		{"piece=claims-encode", func(b *testing.B) {
			loop(b, func() {
				if _, err := codec.Sign(claims); err != nil {
					b.Fatal(err)
				}
			})
		}},
		{"piece=admit-body", func(b *testing.B) {
			loop(b, func() {
				if _, ok := httpwire.ParseAdmit(body); !ok {
					var req admitRequest
					if err := reply.Unmarshal(w, body, &req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}},
		{"piece=cookie-value", func(b *testing.B) {
			loop(b, func() {
				if v, _ := httpwire.CookieValue(pollReq, "fairgate_wait_sale"); v != token {
					b.Fatal("wrong value")
				}
			})
		}},
		{"piece=cookie-line", func(b *testing.B) {
			loop(b, func() { _ = httpwire.CookieLine("fairgate_wait_sale", token, true, claims.Expiry(), false) })
		}},
		{"piece=ticket", func(b *testing.B) {
			loop(b, func() { clear(w.h); httpwire.WriteTicket(w, http.StatusTooManyRequests, &ticket) })
		}},
	}
	for _, c := range cases {
		for _, fast := range []bool{true, false} {
			name := c.name + "/wire=fast"
			if !fast {
				name = c.name + "/wire=std"
			}
			b.Run(name, func(b *testing.B) {
				defer wire.SetFast(wire.SetFast(fast))
				start := cpuTime(b)
				c.f(b)
				b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// cpuTime is the CPU time the process has used: on a machine shared with
// other work, a benchmark's wall time counts the time it waited for a
// core, its CPU time does not.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func loop(b *testing.B, f func()) {
	b.ReportAllocs()
	for b.Loop() {
		f()
	}
}
