package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fairgate/fairgate/admission"
)

const (
	roomName    = "probe"
	loginCookie = "probe_login"
	kid         = "probe"
)

// roomSetup is what the probe configures the room with.
type roomSetup struct {
	order      string
	rate       float64
	difficulty int
	maxBackoff time.Duration
	saleStart  time.Time
}

// room is a running `fairgate proxy` in front of a tiny origin, and the
// secrets the probe gave it.
type room struct {
	site     string
	keys     *admission.KeyRing
	loginKey []byte
	proc     *exec.Cmd
	done     chan struct{}
	origin   *http.Server
	logPath  string
}

// buildBinary builds `fairgate` from the repository into dir.
func buildBinary(ctx context.Context, repo, dir string) (string, error) {
	bin := filepath.Join(dir, "fairgate")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/fairgate")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/fairgate: %w: %s", err, out)
	}
	return bin, nil
}

// freeAddr asks the kernel for a free loopback address.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startRoom writes the room's config into dir and starts the origin and
// the proxy; stop ends both.
func startRoom(ctx context.Context, bin, dir string, s roomSetup) (*room, error) {
	keysCfg, err := admission.GenerateKeys(kid)
	if err != nil {
		return nil, fmt.Errorf("generating keys: %w", err)
	}
	ring, err := keysCfg.Load(admission.Environment{})
	if err != nil {
		return nil, fmt.Errorf("loading generated keys: %w", err)
	}
	loginKey := make([]byte, 32)
	if _, err := rand.Read(loginKey); err != nil {
		return nil, fmt.Errorf("login key: %w", err)
	}
	cfg := map[string]any{
		"room": roomName, "state": "scheduled", "sale_start": s.saleStart.UTC().Format(time.RFC3339Nano),
		"rate": s.rate, "difficulty": s.difficulty, "max_backoff": s.maxBackoff.String(), "queue_order": s.order,
		"keys": keysCfg,
		"identity": map[string]any{"cookie": loginCookie, "algorithm": "HS256",
			"key": base64.StdEncoding.EncodeToString(loginKey), "required": true},
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "room.json")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		return nil, fmt.Errorf("writing the room config: %w", err)
	}
	r := &room{keys: ring, loginKey: loginKey, logPath: filepath.Join(dir, "proxy.log"), done: make(chan struct{})}
	if err := r.startOrigin(); err != nil {
		return nil, err
	}
	if err := r.startProxy(ctx, bin, dir, cfgPath); err != nil {
		r.stop()
		return nil, err
	}
	return r, nil
}

func (r *room) startOrigin() error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	r.origin = &http.Server{Addr: addr, ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("shop\n")) })}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("origin: %w", err)
	}
	go func() { _ = r.origin.Serve(l) }()
	return nil
}

func (r *room) startProxy(ctx context.Context, bin, dir, cfgPath string) error {
	pub, err := freeAddr()
	if err != nil {
		return err
	}
	adm, err := freeAddr()
	if err != nil {
		return err
	}
	log, err := os.Create(r.logPath)
	if err != nil {
		return fmt.Errorf("proxy log: %w", err)
	}
	cmd := exec.Command(bin, "proxy", "--listen", pub, "--admin", adm, "--admin-token", "probe",
		"--upstream", "http://"+r.origin.Addr, "--config", cfgPath, "--state", filepath.Join(dir, "rooms.db"))
	cmd.Stdout, cmd.Stderr, cmd.Dir = log, log, dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("starting fairgate proxy: %w", err)
	}
	r.proc = cmd
	go func() { _ = cmd.Wait(); log.Close(); close(r.done) }()
	r.site = "http://" + pub
	return r.waitReady(ctx, 30*time.Second)
}

// waitReady polls the room's public status until it answers.
func (r *room) waitReady(ctx context.Context, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.site+"/_fairgate/status", nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-r.done:
			return fmt.Errorf("fairgate proxy exited at start: %s", tail(r.logPath))
		case <-ctx.Done():
			return fmt.Errorf("fairgate proxy never answered within %s: %s", within, tail(r.logPath))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop ends the proxy (SIGTERM, then SIGKILL after 10 s) and the origin.
func (r *room) stop() {
	if r.proc != nil && r.proc.Process != nil {
		_ = syscall.Kill(-r.proc.Process.Pid, syscall.SIGTERM)
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-r.proc.Process.Pid, syscall.SIGKILL)
			<-r.done
		}
	}
	if r.origin != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = r.origin.Shutdown(ctx)
	}
}

// login is the site's login cookie for subject, an HS256 JWT the room's
// identity config verifies.
func (r *room) login(subject string, until time.Time) (string, error) {
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Subject: subject, ExpiresAt: jwt.NewNumericDate(until)})
	s, err := t.SignedString(r.loginKey)
	if err != nil {
		return "", fmt.Errorf("signing a login: %w", err)
	}
	return loginCookie + "=" + s, nil
}

// lottery is subject's lottery number in the room: every token of one
// login carries the same draw.
func (r *room) lottery(subject string) float64 {
	return r.keys.Lottery(r.keys.IdentityLot(roomName, subject))
}

// tail is the end of a log, for an error message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 8 {
		lines = lines[len(lines)-8:]
	}
	return strings.Join(lines, "\n")
}
