package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/e2e/internal/nodes"
	waitroom "github.com/fairgate/fairgate/room"
)

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
	p                *nodes.Proc
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
	p, err := nodes.Start(n.name, n.dir, n.logPath, n.env, n.bin, args...)
	if err != nil {
		return err
	}
	n.p = p
	ready := make(chan error, 1)
	go func() {
		if err := nodes.WaitHTTP(ctx, n.admin()+"/metrics", 30*time.Second); err != nil {
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
			return fmt.Errorf("%s: %w (log: %s)", n.name, err, nodes.Tail(n.logPath, 5))
		}
		return nil
	case <-p.Done():
		return fmt.Errorf("%s exited at start: %s", n.name, nodes.Tail(n.logPath, 10))
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
	State       string                  `json:"state"`
	Rate        float64                 `json:"rate"`
	Clock       float64                 `json:"clock"`
	ClockSpeed  float64                 `json:"clock_speed"`
	Now         string                  `json:"now"`
	ClockState  queue.Clock             `json:"clock_state"`
	BucketLevel float64                 `json:"bucket_level"`
	Cluster     *waitroom.ClusterStatus `json:"cluster"`
	Site        waitroom.CapacityStatus `json:"site"`
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

var errSkip = errors.New("skipped")
