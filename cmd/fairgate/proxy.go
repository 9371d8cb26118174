package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"

	"go.uber.org/zap"

	"github.com/fairgate/fairgate/gateway"
	"github.com/fairgate/fairgate/room"
)

func runProxy(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) > 0 && args[0] == "init-tables" {
		return proxyInitTables(ctx, args[1:], stdout)
	}
	fs := newFlags("proxy", stdout)
	listen := fs.String("listen", "127.0.0.1:8000", "public address")
	upstream := fs.String("upstream", "", "the protected site, e.g. http://127.0.0.1:8080 (required)")
	configFile := fs.String("config", "", "gateway config, the JSON of the Caddy module (optional)")
	adminAddr := fs.String("admin", "127.0.0.1:9180", "admin API and /metrics address (loopback only; both need the admin token)")
	adminToken := fs.String("admin-token", os.Getenv("FAIRGATE_ADMIN_TOKEN"), "admin bearer token (default $FAIRGATE_ADMIN_TOKEN, else generated)")
	state := fs.String("state", room.DefaultStateFile, "room-state file of a bolt state_store without path (the config's default store)")
	tlsCert := fs.String("tls-cert", "", "TLS certificate file for the public listener")
	tlsKey := fs.String("tls-key", "", "TLS key file")
	metricsPublic := fs.Bool("metrics-public", false, "serve /metrics on the admin listener without the admin token")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *upstream == "" {
		return usageErr("--upstream is required")
	}
	up, err := parseUpstream(*upstream)
	if err != nil {
		return err
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		return usageErr("--tls-cert and --tls-key go together")
	}
	cfg, err := readGatewayConfig(*configFile)
	if err != nil {
		return err
	}
	if err := requireLoopback(*adminAddr); err != nil {
		return err
	}
	log, err := zap.NewProduction()
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	if *adminToken == "" {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		*adminToken = base64.RawURLEncoding.EncodeToString(b)
		fmt.Fprintf(os.Stderr, "fairgate proxy: generated admin token (set FAIRGATE_ADMIN_TOKEN to choose one): %s\n", *adminToken)
	}
	srv, err := gateway.NewServer(gateway.ServerConfig{
		Upstream: up, Gateway: cfg, StatePath: *state, AdminToken: *adminToken, TLSCert: *tlsCert, TLSKey: *tlsKey, Logger: log,
		MetricsPublic: *metricsPublic,
	})
	if err != nil {
		return err
	}
	pub, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	adm, err := net.Listen("tcp", *adminAddr)
	if err != nil {
		pub.Close()
		return err
	}
	log.Info("fairgate proxy listening", zap.String("public", pub.Addr().String()), zap.String("admin", adm.Addr().String()),
		zap.String("upstream", up.String()))
	return srv.Serve(ctx, pub, adm)
}

// parseUpstream checks --upstream: an http or https URL with a host, so a
// typo fails at start rather than as a 502 on every admitted request.
func parseUpstream(raw string) (*url.URL, error) {
	up, err := url.Parse(raw)
	if err != nil {
		return nil, usageErr("--upstream: %v", err)
	}
	if up.Scheme != "http" && up.Scheme != "https" || up.Host == "" {
		return nil, usageErr("--upstream %q: want an http:// or https:// URL with a host", raw)
	}
	return up, nil
}

func readGatewayConfig(path string) (gateway.Config, error) {
	var cfg gateway.Config
	if path == "" {
		return cfg, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("reading config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("config %s: %w", path, err)
	}
	if err := room.CheckExplicitZeros(raw); err != nil {
		return cfg, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

func requireLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErr("--admin %q: %v", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return usageErr("--admin %q: the admin listener must be on a loopback address", addr)
	}
	return nil
}
