package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/proxy"
)

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitHTTP polls url until anything answers or the deadline passes.
func waitHTTP(ctx context.Context, url string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s never answered within %s: %w", url, within, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// proc is a child process with its log in a file.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

func startProc(name, dir, logPath string, env []string, bin string, args ...string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	// Own process group, so a stop reaches Java's children too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	return p, nil
}

// stop sends sig to the process group and waits for the exit, escalating to
// SIGKILL after within.
func (p *proc) stop(sig syscall.Signal, within time.Duration) error {
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
		return nil
	case <-time.After(within):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("%s did not stop within %s on %v; killed", p.name, within, sig)
	}
}

// dynamo is DynamoDB Local with a data directory, so a restart on the same
// port finds the tables and items it had.
type dynamo struct {
	jarDir, dataDir, logPath string
	port                     int
	p                        *proc
}

func (d *dynamo) endpoint() string { return fmt.Sprintf("http://127.0.0.1:%d", d.port) }

func (d *dynamo) start(ctx context.Context) error {
	if err := os.MkdirAll(d.dataDir, 0o755); err != nil {
		return err
	}
	p, err := startProc("dynamodb-local", d.dataDir, d.logPath, nil, "java",
		"-Djava.library.path="+filepath.Join(d.jarDir, "DynamoDBLocal_lib"), "-jar", filepath.Join(d.jarDir, "DynamoDBLocal.jar"),
		"-sharedDb", "-dbPath", d.dataDir, "-port", fmt.Sprint(d.port), "-disableTelemetry")
	if err != nil {
		return err
	}
	d.p = p
	return waitHTTP(ctx, d.endpoint(), 60*time.Second)
}

func (d *dynamo) stop() error { return d.p.stop(syscall.SIGTERM, 10*time.Second) }

// node is one `fairgate proxy` process, or one `caddy run` process with
// the waiting_room handler (caddy set). Its ports stay the same across
// restarts, as a load balancer's target would.
type node struct {
	name             string
	caddy            bool
	bin, configPath  string
	dir, logPath     string
	upstream         string
	pubPort, admPort int
	adminToken       string
	env              []string
	p                *proc
	client           *http.Client
}

func (n *node) site() string  { return fmt.Sprintf("http://127.0.0.1:%d", n.pubPort) }
func (n *node) admin() string { return fmt.Sprintf("http://127.0.0.1:%d", n.admPort) }

// rooms is where the node's admin API serves its rooms: Caddy's admin
// endpoint mounts it under /waiting_room.
func (n *node) rooms() string {
	if n.caddy {
		return n.admin() + "/waiting_room/rooms/"
	}
	return n.admin() + "/rooms/"
}

func (n *node) start(ctx context.Context) error {
	// The working directory is the node's own: a bolt store's default
	// file (--state) lands there, never in the repository.
	args := []string{"proxy",
		"--listen", fmt.Sprintf("127.0.0.1:%d", n.pubPort), "--admin", fmt.Sprintf("127.0.0.1:%d", n.admPort),
		"--upstream", n.upstream, "--config", n.configPath, "--admin-token", n.adminToken}
	if n.caddy {
		args = []string{"run", "--config", n.configPath}
	}
	p, err := startProc(n.name, n.dir, n.logPath, n.env, n.bin, args...)
	if err != nil {
		return err
	}
	n.p = p
	ready := make(chan error, 1)
	go func() {
		if err := waitHTTP(ctx, n.admin()+"/metrics", 30*time.Second); err != nil {
			ready <- err
			return
		}
		// Caddy's admin endpoint answers before its config has started,
		// and the room is listed only then.
		ready <- n.waitRoom(ctx, 30*time.Second)
	}()
	select {
	case err := <-ready:
		if err != nil {
			return fmt.Errorf("%s: %w (log: %s)", n.name, err, tail(n.logPath, 5))
		}
		return nil
	case <-p.done:
		return fmt.Errorf("%s exited at start: %s", n.name, tail(n.logPath, 10))
	}
}

// waitRoom polls the node's admin API until it lists the room.
func (n *node) waitRoom(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		_, err := n.status(ctx, room)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the room never showed in the admin API within %s: %w", within, err)
		}
		sleep(ctx, 100*time.Millisecond)
	}
}

// status is a room's figures from a node's admin API, with the driver's
// clock before and after the call.
type status struct {
	sent, recvd time.Time
	State       string               `json:"state"`
	Rate        float64              `json:"rate"`
	Clock       float64              `json:"clock"`
	ClockSpeed  float64              `json:"clock_speed"`
	Now         string               `json:"now"`
	ClockState  admission.Clock      `json:"clock_state"`
	BucketLevel float64              `json:"bucket_level"`
	Cluster     *proxy.ClusterStatus `json:"cluster"`
}

func (n *node) status(ctx context.Context, room string) (status, error) {
	var st status
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, n.rooms()+room, nil)
	req.Header.Set("Authorization", "Bearer "+n.adminToken)
	st.sent = time.Now()
	resp, err := n.client.Do(req)
	if err != nil {
		return st, fmt.Errorf("%s admin: %w", n.name, err)
	}
	defer resp.Body.Close()
	st.recvd = time.Now()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return st, fmt.Errorf("%s admin: %w", n.name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("%s admin: %d %.200s", n.name, resp.StatusCode, bytes.TrimSpace(body))
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return st, fmt.Errorf("%s admin: %w", n.name, err)
	}
	return st, nil
}

// change posts a RoomChange through the node's admin API. A 503 (the
// store failing: the change could not be saved) is tried again, as an
// operator would, for up to 10 s.
func (n *node) change(ctx context.Context, room string, change map[string]any) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := n.changeOnce(ctx, room, change)
		var unavailable errUnavailable
		if !errors.As(err, &unavailable) || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		sleep(ctx, 500*time.Millisecond)
	}
}

type errUnavailable struct{ error }

func (n *node) changeOnce(ctx context.Context, room string, change map[string]any) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	b, _ := json.Marshal(change)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, n.rooms()+room, strings.NewReader(string(b)))
	req.Header.Set("Authorization", "Bearer "+n.adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s admin change: %w", n.name, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode == http.StatusServiceUnavailable {
		return errUnavailable{fmt.Errorf("%s admin change %s: %d %.200s", n.name, b, resp.StatusCode, bytes.TrimSpace(body))}
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s admin change %s: %d %.200s", n.name, b, resp.StatusCode, bytes.TrimSpace(body))
	}
	return nil
}

// metrics scrapes the node's /metrics and returns the sum of every sample
// of each metric family whose name starts with prefix.
func (n *node) metrics(ctx context.Context, prefix string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, n.admin()+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+n.adminToken) // fairgate proxy's /metrics needs it
	resp, err := n.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[i+1:], &v); err != nil {
			continue
		}
		out[line[:i]] += v
	}
	return out, nil
}

func tail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

var errSkip = errors.New("skipped")
