// Package demo is `fairgate demo`: a ticket shop for a 20,000-seat stadium
// behind the waiting room, all in one process — the seat service on the
// embedded store, the shop as the protected origin, Caddy with the
// waiting_room module in front (the flagship path), an optional simulated
// crowd, and an operator page with live charts.
package demo

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/template"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	_ "github.com/caddyserver/caddy/v2/modules/standard" // the handlers the Caddyfile uses
	"go.uber.org/zap"

	"github.com/fairgate/fairgate/admission"

	"github.com/fairgate/fairgate/admission/tokens"
	_ "github.com/fairgate/fairgate/caddymodule" // waiting_room
	"github.com/fairgate/fairgate/internal/httpserver"
	"github.com/fairgate/fairgate/seats"
	"github.com/fairgate/fairgate/seats/boltstore"
	"github.com/fairgate/fairgate/seats/httpapi"
)

// Options configure the demo.
type Options struct {
	// Listen is the site's address, the one URL a person opens.
	Listen string
	// Admin is Caddy's admin API address (loopback).
	Admin string
	// DB is the seat store's file; empty means a temporary one.
	DB string
	// Crowd is how many simulated visitors keep the queue busy.
	Crowd int
	// SaleIn schedules the sale this far ahead (a pre-queue until then).
	SaleIn time.Duration
	// Rate is admissions per second; Tau the initial mean wait.
	Rate float64
	Tau  time.Duration
	// Difficulty is the proof of work in bits.
	Difficulty int
	// OperatorToken guards the operator page; empty means a random one.
	// Either way it is printed at start, in the operator page's URL.
	OperatorToken string
	Out           io.Writer
	Logger        *zap.Logger
}

const (
	eventID = "final-2026"
	room    = "sale"
)

//go:embed Caddyfile.tmpl
var caddyfileTemplate string

// Run starts everything, prints the URL, and serves until ctx ends.
func Run(ctx context.Context, opts Options) error {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	// Taken addresses fail here, clearly: Caddy shares listeners between
	// its own configs and would not say so.
	for _, addr := range []struct{ flag, addr string }{{"--listen", opts.Listen}, {"--admin", opts.Admin}} {
		ln, err := net.Listen("tcp", addr.addr)
		if err != nil {
			return fmt.Errorf("%s %s is not free (another fairgate demo?): %w", addr.flag, addr.addr, err)
		}
		ln.Close()
	}
	if opts.OperatorToken == "" {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		opts.OperatorToken = hex.EncodeToString(b)
	}
	keys, err := tokens.GenerateKeys("demo")
	if err != nil {
		return err
	}
	ring, err := keys.Load(tokens.Environment{})
	if err != nil {
		return err
	}
	codec := tokens.NewCodec(ring, admission.DefaultPolicy.Leeway)

	dbPath := opts.DB
	if dbPath == "" {
		dir, err := os.MkdirTemp("", "fairgate-demo")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		dbPath = filepath.Join(dir, "seats.db")
	}
	store, err := boltstore.Open(dbPath)
	if err != nil {
		return err
	}
	defer store.Close()
	svc := seats.NewService(store, time.Now)
	if _, err := svc.CreateEvent(ctx, seats.Stadium(eventID, "The Final · fairgate demo stadium", time.Now().Add(14*24*time.Hour).Truncate(time.Hour))); err != nil && !errors.Is(err, seats.ErrExists) {
		return fmt.Errorf("creating the demo event: %w", err)
	}
	seatsLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	paymentKey := []byte(rand.Text() + rand.Text())
	api := httpapi.New(svc, httpapi.Config{Codec: codec, Room: room, DefaultEvent: eventID, PaymentKey: paymentKey, Logger: log})
	go serve(ctx, seatsLn, api)

	adminURL := &url.URL{Scheme: "http", Host: opts.Admin}
	shopLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	payments := &demoPaymentProvider{key: paymentKey, seats: &url.URL{Scheme: "http", Host: seatsLn.Addr().String()}}
	go serve(ctx, shopLn, newShop(codec, room, eventID, adminURL, opts.OperatorToken, payments))

	raw, err := json.Marshal(keys)
	if err != nil {
		return err
	}
	// Caddy reads the keys from a placeholder, as a real deployment would.
	if err := os.Setenv("FAIRGATE_DEMO_KEYS", string(raw)); err != nil {
		return err
	}
	cfg, err := caddyConfig(opts, seatsLn.Addr().String(), shopLn.Addr().String(), strings.TrimSuffix(dbPath, ".db")+"-rooms.db")
	if err != nil {
		return err
	}
	if err := caddy.Load(cfg, true); err != nil {
		return fmt.Errorf("starting Caddy: %w", err)
	}
	defer func() { _ = caddy.Stop() }()

	site := "http://" + opts.Listen
	fmt.Fprintf(opts.Out, "\nfairgate demo: the waiting room in front of a ticket shop (20,000 seats)\n\n")
	fmt.Fprintf(opts.Out, "  open   %s/\n", site)
	fmt.Fprintf(opts.Out, "  operator page  %s/operator?token=%s   (this machine only)\n", site, opts.OperatorToken)
	if opts.SaleIn > 0 {
		fmt.Fprintf(opts.Out, "  the sale starts in %v: until then everyone joins a pre-queue, shuffled by lottery at the start\n", opts.SaleIn)
	}
	if opts.Crowd > 0 {
		fmt.Fprintf(opts.Out, "  %d simulated visitors (honest, impatient and scripted) keep the queue busy\n", opts.Crowd)
		go runCrowd(ctx, site, opts.Crowd, log)
	}
	fmt.Fprintf(opts.Out, "\nCtrl-C stops everything.\n")
	<-ctx.Done()
	return nil
}

func serve(ctx context.Context, ln net.Listener, h http.Handler) {
	_ = httpserver.Serve(ctx, 5*time.Second, httpserver.Serving{Server: httpserver.New(h, httpserver.Defaults), Listener: ln})
}

// bindHost is the host of a listen address, for Caddy's bind: the site
// listens where --listen says, not on every interface.
func bindHost(listen string) string {
	host, _, err := net.SplitHostPort(listen)
	if err != nil || host == "" {
		return "0.0.0.0"
	}
	return host
}

// caddyConfig renders the demo Caddyfile and adapts it to Caddy's JSON.
// The room's state store is a bolt file beside the seat store: temporary
// with it, or kept with a --db file, so a demo never shares another's.
func caddyConfig(opts Options, seatsAddr, shopAddr, statePath string) ([]byte, error) {
	tmpl, err := template.New("Caddyfile").Parse(caddyfileTemplate)
	if err != nil {
		return nil, err
	}
	data := map[string]any{
		"Admin": opts.Admin, "Site": opts.Listen, "Bind": bindHost(opts.Listen), "Seats": seatsAddr, "Shop": shopAddr, "Event": eventID,
		"Rate": opts.Rate, "Tau": opts.Tau.String(), "Difficulty": opts.Difficulty, "SaleStart": "",
		"StatePath": statePath,
	}
	if opts.SaleIn > 0 {
		data["SaleStart"] = time.Now().Add(opts.SaleIn).UTC().Format(time.RFC3339)
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, data); err != nil {
		return nil, err
	}
	adapter := caddyfile.Adapter{ServerType: httpcaddyfile.ServerType{}}
	cfg, warnings, err := adapter.Adapt(buf.Bytes(), map[string]any{"filename": "demo Caddyfile"})
	if err != nil {
		return nil, fmt.Errorf("adapting the demo Caddyfile: %w", err)
	}
	for _, w := range warnings {
		return nil, fmt.Errorf("demo Caddyfile: %s", w.Message)
	}
	return cfg, nil
}
