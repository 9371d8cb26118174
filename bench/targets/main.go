// Command targets serves one side of a benchmark comparison, so that
// bench/gateway.sh can load each with wrk in its own process:
//
//	targets origin ADDR                 the protected site: a small page, a seat map
//	targets plain ADDR FILE STATUS      writes FILE's bytes with STATUS (the baseline)
//	targets static ADDR DIR             http.FileServer (the cache's baseline)
//	targets baseline ADDR UPSTREAM      httputil.ReverseProxy alone, same tuned transport
//	targets pass KEYS ROOM              prints a valid pass for wrk's Cookie header
//	targets capture URL ACCEPT FILE     saves the gateway's waiting answer for `plain`
//	targets tokens N                    RSS before and after issuing N waiting tokens
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/proxy"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "targets:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: see the package comment")
	}
	switch args[0] {
	case "origin":
		return serve(args[1], originHandler())
	case "plain":
		body, err := os.ReadFile(args[2])
		if err != nil {
			return err
		}
		status, _ := strconv.Atoi(args[3])
		ctype := "text/html; charset=utf-8"
		if strings.HasPrefix(strings.TrimSpace(string(body)), "{") {
			ctype = "application/json"
		}
		return serve(args[1], http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctype)
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(status)
			_, _ = w.Write(body)
		}))
	case "static":
		return serve(args[1], http.FileServer(http.Dir(args[2])))
	case "baseline":
		up, err := url.Parse(args[2])
		if err != nil {
			return err
		}
		return serve(args[1], proxy.NewReverseProxy(up, proxy.Transport(), nil, nil))
	case "pass":
		return printPass(args[1], args[2])
	case "capture":
		return capture(args[1], args[2], args[3])
	case "tokens":
		n, err := strconv.Atoi(args[1])
		if err != nil {
			return err
		}
		return tokens(n)
	}
	return fmt.Errorf("unknown target %q", args[0])
}

func serve(addr string, h http.Handler) error {
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	return srv.ListenAndServe()
}

// originHandler is the protected site. /api/sections/* counts its reads
// (GET /reads tells) so the cache's upstream traffic can be checked.
func originHandler() http.Handler {
	var reads atomic.Int64
	page := []byte(strings.Repeat("<p>ticket shop</p>", 40))
	seatMap := []byte(`{"section":"A","seats":[` + strings.TrimSuffix(strings.Repeat(`{"id":"A-1-1","s":"available"},`, 200), ",") + `]}`)
	mux := http.NewServeMux()
	mux.HandleFunc("/reads", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, reads.Load()) })
	mux.HandleFunc("/api/sections/", func(w http.ResponseWriter, r *http.Request) {
		reads.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, s-maxage=2")
		_, _ = w.Write(seatMap)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	})
	return mux
}

func printPass(keysFile, room string) error {
	raw, err := os.ReadFile(keysFile)
	if err != nil {
		return err
	}
	var cfg proxy.Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return err
	}
	ring, err := cfg.Keys.Load(admission.Environment{})
	if err != nil {
		return err
	}
	now := time.Now()
	r, err := admission.NewRoom(admission.RoomConfig{Name: room, State: admission.StateOpen, Rate: 1e6, Tau: time.Second}, now)
	if err != nil {
		return err
	}
	g := admission.NewGate(ring, admission.Policy{PassTTL: 2 * time.Hour}, admission.NewMemoryLedger(10, time.Now))
	tk, err := g.Issue(r, admission.Visitor{}, now)
	if err != nil {
		return err
	}
	d := g.Decide(context.Background(), r, admission.Attempt{Token: tk.Token, Nonce: "0", Now: now})
	if d.Outcome != admission.OutcomeAdmit {
		return fmt.Errorf("minting a pass: %v %v", d.Outcome, d.Err)
	}
	fmt.Println(d.Pass)
	return nil
}

func capture(u, accept, file string) error {
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	fmt.Println(resp.StatusCode)
	return os.WriteFile(file, b, 0o644)
}

// tokens issues n waiting tokens through the gateway's token endpoint and
// reports the resident set size before and after: nothing is kept per visitor.
func tokens(n int) error {
	cfg := proxy.Config{Room: "mem"}
	shared, err := proxy.NewShared(cfg, time.Now)
	if err != nil {
		return err
	}
	gw, err := proxy.New(cfg, shared, proxy.Options{})
	if err != nil {
		return err
	}
	defer gw.Close()
	issue := func() error {
		rec := httptest.NewRecorder()
		gw.ServeHTTP(rec, httptest.NewRequest("POST", "/_fairgate/token", nil))
		if rec.Code != 200 {
			return fmt.Errorf("token endpoint answered %d: %s", rec.Code, rec.Body)
		}
		return nil
	}
	for range 10000 { // warm up pools and caches before the first reading
		if err := issue(); err != nil {
			return err
		}
	}
	before := rss()
	start := time.Now()
	for i := range n {
		if err := issue(); err != nil {
			return err
		}
		if i%1_000_000 == 999_999 {
			fmt.Printf("%d tokens, RSS %.1f MB\n", i+1, float64(rss())/1e6)
		}
	}
	elapsed := time.Since(start)
	runtime.GC()
	debug.FreeOSMemory()
	after := rss()
	fmt.Printf("issued %d tokens in %v (%.0f/s); RSS before %.1f MB, after %.1f MB, growth %.1f MB\n",
		n, elapsed.Round(time.Second), float64(n)/elapsed.Seconds(), float64(before)/1e6, float64(after)/1e6, float64(after-before)/1e6)
	return nil
}

func rss() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}
