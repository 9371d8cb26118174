// Command targets serves one side of a benchmark comparison, so that
// bench/gateway.sh can load each with wrk in its own process:
//
//	targets origin ADDR                 the protected site: a small page, a seat map
//	targets capture URL ACCEPT FILE     saves an answer of fairgate's (status, headers, body)
//	targets replay ADDR FILE            answers every request with a captured answer, from memory
//	targets caddy-baseline CONFIG ADDR=FILE...
//	                                    prints Caddy's JSON CONFIG with a site per ADDR that
//	                                    answers FILE's bytes: headers, then static_response
//	targets baseline ADDR UPSTREAM      httputil.ReverseProxy alone, with fairgate's transport
//	targets pass KEYS ROOM              prints a valid pass for wrk's Cookie header
//	targets tokens N                    RSS before and after issuing N waiting tokens
//	targets poll SITE ROOM              prints a Cookie header and an admit body that
//	                                    SITE's room answers 429 "wait" to, every time
//	targets open [flags] URL            open-loop load at a fixed rate: rate/s p50 p99 errors
//
// A baseline answers exactly what fairgate answers (the scripts check that
// with curl), so that the comparison measures the work behind the bytes.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fairgate/fairgate/admission"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/fairgate/fairgate/gateway"
	"github.com/fairgate/fairgate/room"
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
	case "replay":
		if len(args) != 3 {
			return fmt.Errorf("usage: targets replay ADDR FILE")
		}
		h, err := replay(args[2])
		if err != nil {
			return err
		}
		return serve(args[1], h)
	case "caddy-baseline":
		return caddyBaseline(args[1], args[2:])
	case "baseline":
		up, err := url.Parse(args[2])
		if err != nil {
			return err
		}
		return serve(args[1], gateway.NewReverseProxy(up, nil, nil))
	case "pass":
		return printPass(args[1], args[2])
	case "capture":
		if len(args) != 4 {
			return fmt.Errorf("usage: targets capture URL ACCEPT FILE")
		}
		return capture(args[1], args[2], args[3])
	case "poll":
		if len(args) != 3 {
			return fmt.Errorf("usage: targets poll SITE ROOM")
		}
		return pollRequest(args[1], args[2])
	case "open":
		return openLoop(args[1:])
	case "tokens":
		n, err := strconv.Atoi(args[1])
		if err != nil {
			return err
		}
		return issueTokens(n)
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
	var cfg gateway.Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return err
	}
	ring, err := cfg.Keys.Load(tokens.Environment{})
	if err != nil {
		return err
	}
	now := time.Now()
	r, err := admission.NewRoom(admission.RoomConfig{Name: room, State: admission.StateOpen, Rate: 1e6, Tau: time.Second}, now)
	if err != nil {
		return err
	}
	g := admission.NewGate(ring, admission.Policy{PassTTL: 2 * time.Hour}, queue.NewMemoryLedger(10, time.Now))
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

// capture saves the answer of u to an Accept of accept, as HTTP/1.1 text.
func capture(u, accept, file string) error {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", accept)
	// As curl and wrk ask: without Accept-Encoding (Go's client would add
	// gzip and undo it, keeping the gzip answer's ETag). The second answer
	// is kept: a cache answers the first from upstream, every later one
	// from memory, as under load.
	req.Header.Set("Accept-Encoding", "identity")
	var resp *http.Response
	for range 2 {
		if resp != nil {
			resp.Body.Close()
		}
		if resp, err = http.DefaultClient.Do(req); err != nil {
			return err
		}
	}
	defer resp.Body.Close()
	dump, err := httputil.DumpResponse(resp, true)
	if err != nil {
		return err
	}
	return os.WriteFile(file, dump, 0o644)
}

// smallBody is the size up to which net/http sets Content-Length itself
// (its buffer before it would switch to chunked encoding).
const smallBody = 2048

// captured is an answer saved by capture.
type captured struct {
	status int
	header http.Header // without Date, which every server writes itself
	body   []byte
}

func readCaptured(file string) (captured, error) {
	f, err := os.Open(file)
	if err != nil {
		return captured{}, err
	}
	defer f.Close()
	resp, err := http.ReadResponse(bufio.NewReader(f), nil)
	if err != nil {
		return captured{}, fmt.Errorf("%s: %w", file, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return captured{}, fmt.Errorf("%s: %w", file, err)
	}
	resp.Header.Del("Date")
	// net/http writes Content-Length itself, after the other headers, for
	// a body this small written at once; a larger answer's handler set it.
	resp.Header.Del("Content-Length")
	if len(body) > smallBody {
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	}
	return captured{status: resp.StatusCode, header: resp.Header, body: body}, nil
}

// replay answers every request with the captured answer in file, from
// memory: the least work a server can do to send those bytes.
func replay(file string) (http.Handler, error) {
	c, err := readCaptured(file)
	if err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		for k, v := range c.header {
			h[k] = v
		}
		w.WriteHeader(c.status)
		_, _ = w.Write(c.body)
	}), nil
}

// caddyBaseline prints Caddy's JSON config from file with one more server
// per addr=file pair, answering file's captured bytes with one handler in
// front of static_response (Caddy's respond): headers, which adds them
// ("set" would join a header's values into one line, where fairgate
// writes one line per value, as for Vary).
func caddyBaseline(configFile string, sites []string) error {
	raw, err := os.ReadFile(configFile)
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return fmt.Errorf("%s: %w", configFile, err)
	}
	servers, ok := lookupMap(cfg, "apps", "http", "servers")
	if !ok {
		return fmt.Errorf("%s: no apps.http.servers", configFile)
	}
	for i, site := range sites {
		addr, file, ok := strings.Cut(site, "=")
		if !ok {
			return fmt.Errorf("want ADDR=FILE, got %q", site)
		}
		c, err := readCaptured(file)
		if err != nil {
			return err
		}
		c.header.Del("Server") // Caddy writes its own
		servers[fmt.Sprintf("baseline%d", i)] = map[string]any{
			"listen": []string{addr},
			"routes": []any{map[string]any{"handle": []any{
				map[string]any{"handler": "headers", "response": map[string]any{"add": c.header}},
				map[string]any{"handler": "static_response", "status_code": c.status, "body": string(c.body)},
			}}},
			"automatic_https": map[string]any{"disable": true},
		}
	}
	out := json.NewEncoder(os.Stdout)
	out.SetEscapeHTML(false)
	return out.Encode(cfg)
}

func lookupMap(m map[string]any, path ...string) (map[string]any, bool) {
	for _, k := range path {
		next, ok := m[k].(map[string]any)
		if !ok {
			return nil, false
		}
		m = next
	}
	return m, true
}

// issueTokens issues n waiting tokens through the gateway's token endpoint and
// reports the resident set size before and after: nothing is kept per visitor.
func issueTokens(n int) error {
	cfg := gateway.Config{Config: room.Config{Room: "mem"}}
	shared, err := gateway.NewShared(cfg, time.Now)
	if err != nil {
		return err
	}
	gw, err := gateway.New(cfg, shared, gateway.Options{})
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
