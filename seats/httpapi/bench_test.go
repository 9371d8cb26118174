//go:build unix

package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/fairgate/fairgate/internal/httpserver"
	"github.com/fairgate/fairgate/seats"
	"github.com/fairgate/fairgate/seats/boltstore"
	"github.com/fairgate/fairgate/seats/storetest"
)

// benchClients is how many clients BenchmarkHoldHTTP runs per GOMAXPROCS.
const benchClients = 32

// BenchmarkHoldHTTP is one hold and its release over real loopback HTTP,
// each with a real pass and (key) its own Idempotency-Key or (no-key) none,
// through the server `fairgate seats` runs (internal/httpserver) on the
// embedded store: benchClients×GOMAXPROCS clients, each on a row of its
// own. ns/op and allocs/op cover both requests, client side included.
//
//	go test -run XXX -bench HoldHTTP -benchmem -cpuprofile cpu.out ./seats/httpapi
func BenchmarkHoldHTTP(b *testing.B) {
	b.Run("key", func(b *testing.B) { benchmarkHoldHTTP(b, true) })
	b.Run("no-key", func(b *testing.B) { benchmarkHoldHTTP(b, false) })
}

func benchmarkHoldHTTP(b *testing.B, withKey bool) {
	clk := &clock{now: storetest.T0}
	ring, err := tokens.NewKeyRing("k", map[string][]byte{"k": []byte("0123456789abcdef0123456789abcdef")}, []byte("lottery-key-0123456789abcdef0123"))
	if err != nil {
		b.Fatal(err)
	}
	store, err := boltstore.Open(filepath.Join(b.TempDir(), "s.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	svc := seats.NewService(store, clk.Now)
	clients := benchClients * runtime.GOMAXPROCS(0)
	ev := seats.Event{ID: "ev", Name: "bench", MaxSeats: 6, HoldWindow: seats.Duration(time.Hour)}
	for c := range clients {
		r := seats.Row{ID: "1"}
		for i := 1; i <= 20; i++ {
			r.Seats = append(r.Seats, seats.SeatSpec{Number: i})
		}
		ev.Sections = append(ev.Sections, seats.Section{ID: fmt.Sprintf("C%d", c), Blocks: []seats.Block{{ID: "1", Rows: []seats.Row{r}}}})
	}
	if _, err := svc.CreateEvent(context.Background(), ev); err != nil {
		b.Fatal(err)
	}
	api := New(svc, Config{Codec: tokens.NewCodec(ring, time.Second), Room: "sale", DefaultEvent: "ev", PaymentKey: testPaymentKey})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := httpserver.New(api, httpserver.Defaults)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	httpc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer httpc.CloseIdleConnections()

	room, err := admission.NewRoom(admission.RoomConfig{Name: "sale", State: admission.StateOpen, Rate: 1e6, Burst: 1e6, Tau: time.Second}, clk.Now())
	if err != nil {
		b.Fatal(err)
	}
	gate := admission.NewGate(ring, admission.Policy{PassTTL: time.Hour}, queue.NewMemoryLedger(1<<12, clk.Now))
	do := func(method, path, body, pass string) (int, []byte, error) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set(PassHeader, pass)
		if withKey {
			req.Header.Set("Idempotency-Key", rand.Text())
		}
		resp, err := httpc.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		return resp.StatusCode, got, err
	}
	type client struct{ pass, session, section string }
	list := make([]client, clients)
	for c := range list {
		user := fmt.Sprintf("u%d", c)
		tk, err := gate.Issue(room, admission.Visitor{Subject: user}, clk.Now())
		if err != nil {
			b.Fatal(err)
		}
		d := gate.Decide(context.Background(), room, admission.Attempt{Token: tk.Token, Nonce: "0", Visitor: admission.Visitor{Subject: user}, Now: clk.Now()})
		if d.Outcome != admission.OutcomeAdmit {
			b.Fatalf("admitting %s: %v", user, d.Outcome)
		}
		code, body, err := do("POST", "/api/sessions", "", d.Pass)
		if err != nil || code != http.StatusCreated {
			b.Fatalf("opening a session: %d %s %v", code, body, err)
		}
		var v struct{ Session string }
		if err := json.Unmarshal(body, &v); err != nil {
			b.Fatal(err)
		}
		list[c] = client{pass: d.Pass, session: v.Session, section: fmt.Sprintf("C%d", c)}
	}

	var next atomic.Int64
	b.SetParallelism(benchClients)
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := list[int(next.Add(1)-1)%clients]
		for i := 0; pb.Next(); i++ {
			seat := seats.SeatID(c.section, "1", "1", 1+i%20)
			code, body, err := do("POST", "/api/sessions/"+c.session+"/holds", `{"seats":["`+seat+`"]}`, c.pass)
			if err != nil || code != http.StatusOK {
				b.Errorf("hold: %d %s %v", code, body, err)
				return
			}
			code, body, err = do("DELETE", "/api/sessions/"+c.session+"/holds/"+seat, "", c.pass)
			if err != nil || code != http.StatusOK {
				b.Errorf("release: %d %s %v", code, body, err)
				return
			}
		}
	})
	b.StopTimer()
	// CPU time per op (user + system, the whole process: the clients'
	// share included) tells more than ns/op on a machine shared with
	// other work, where the wall clock waits for CPU it does not get.
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
