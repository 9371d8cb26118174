package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/fairgate/fairgate/e2e/internal/nodes"
	waitroom "github.com/fairgate/fairgate/room"
	"github.com/golang-jwt/jwt/v5"
)

const (
	roomName    = "probe"
	loginCookie = "probe_login"
	kid         = "probe"
	adminToken  = "probe"
)

// roomSetup is what the probe configures the room with.
type roomSetup struct {
	order      string
	rate       float64
	difficulty int
	maxBackoff time.Duration
	// lead is from when the room is about to start its nodes to the sale
	// start, less their start allowance: the visitors' time before it.
	lead time.Duration
	// nodes is how many `fairgate proxy` processes serve the room: one on
	// a bolt file, or several sharing DynamoDB Local started from
	// dynamoJar (the directory holding DynamoDBLocal.jar).
	nodes     int
	dynamoJar string
}

// nodeStart is each node's allowance, from its start to joined on a
// loaded machine: the sale start is this much per node past the lead.
const nodeStart = 5 * time.Second

// room is the running `fairgate proxy` nodes of one room in front of a
// tiny origin, and the secrets the probe gave them.
type room struct {
	saleStart time.Time
	sites     []string // each node's public address, as a URL
	admins    []string // each node's admin API, as a URL
	keys      *tokens.KeyRing
	loginKey  []byte
	procs     []*nodes.Proc
	logPaths  []string
	ddb       *nodes.Dynamo
	origin    *http.Server
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

// roomConfig is the room every node runs, without its state store.
func roomConfig(s roomSetup, saleStart time.Time, keysCfg tokens.KeysConfig, loginKey []byte) map[string]any {
	return map[string]any{
		"room": roomName, "state": "scheduled", "sale_start": saleStart.UTC().Format(time.RFC3339Nano),
		"rate": s.rate, "difficulty": s.difficulty, "max_backoff": s.maxBackoff.String(), "queue_order": s.order,
		"keys": keysCfg,
		"identity": map[string]any{"cookie": loginCookie, "algorithm": "HS256",
			"key": base64.StdEncoding.EncodeToString(loginKey), "required": true},
	}
}

// startRoom writes the room's config into dir and starts the origin, the
// store (DynamoDB Local, for several nodes) and the nodes; stop ends them.
// The sale start is set once the store answers (a JVM's start on a loaded
// machine is no part of the visitors' lead).
func startRoom(ctx context.Context, bin, dir string, s roomSetup) (*room, error) {
	keysCfg, err := tokens.GenerateKeys(kid)
	if err != nil {
		return nil, fmt.Errorf("generating keys: %w", err)
	}
	ring, err := keysCfg.Load(tokens.Environment{})
	if err != nil {
		return nil, fmt.Errorf("loading generated keys: %w", err)
	}
	loginKey := make([]byte, 32)
	if _, err := rand.Read(loginKey); err != nil {
		return nil, fmt.Errorf("login key: %w", err)
	}
	r := &room{keys: ring, loginKey: loginKey}
	if err := r.startOrigin(); err != nil {
		return nil, err
	}
	if s.nodes > 1 {
		if err := r.startStore(ctx, bin, dir, s.dynamoJar); err != nil {
			r.stop()
			return nil, err
		}
	}
	r.saleStart = time.Now().Add(s.lead + time.Duration(s.nodes)*nodeStart).Truncate(time.Second)
	cfg := roomConfig(s, r.saleStart, keysCfg, loginKey)
	if err := r.startNodes(ctx, bin, dir, s.nodes, cfg); err != nil {
		r.stop()
		return nil, err
	}
	return r, nil
}

// storeTable is the nodes' table in DynamoDB Local (a fresh one each run).
const storeTable = "fairgate-probe"

// startStore starts DynamoDB Local from jarDir, in memory, with the
// nodes' table.
func (r *room) startStore(ctx context.Context, bin, dir, jarDir string) error {
	port, err := nodes.FreePort()
	if err != nil {
		return err
	}
	r.ddb = &nodes.Dynamo{JarDir: jarDir, LogPath: filepath.Join(dir, "dynamodb.log"), Port: port}
	if err := r.ddb.Start(ctx); err != nil {
		return err
	}
	return nodes.InitTables(ctx, bin, r.ddb.Endpoint(), storeTable)
}

// startNodes starts n nodes of the room cfg: one on a bolt file in dir, or
// several on the table in DynamoDB Local.
func (r *room) startNodes(ctx context.Context, bin, dir string, n int, cfg map[string]any) error {
	for i := range n {
		name := fmt.Sprintf("node%d", i+1)
		nodeDir := filepath.Join(dir, name)
		if err := os.MkdirAll(nodeDir, 0o755); err != nil {
			return err
		}
		if r.ddb != nil {
			cfg["state_store"] = nodes.StateStore(r.ddb.Endpoint(), storeTable, name)
		}
		b, err := json.MarshalIndent(cfg, "", "  ")
		if err != nil {
			return err
		}
		cfgPath := filepath.Join(nodeDir, "room.json")
		if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
			return fmt.Errorf("writing the room config: %w", err)
		}
		if err := r.startNode(ctx, bin, name, nodeDir, cfgPath); err != nil {
			return err
		}
	}
	return nil
}

func (r *room) startOrigin() error {
	addr, err := nodes.FreeAddr()
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

// startNode starts one `fairgate proxy` of the room in dir (its bolt
// file, when it has no state_store, lands there) and waits until it
// issues tokens.
func (r *room) startNode(ctx context.Context, bin, name, dir, cfgPath string) error {
	pub, err := nodes.FreeAddr()
	if err != nil {
		return err
	}
	adm, err := nodes.FreeAddr()
	if err != nil {
		return err
	}
	logPath := filepath.Join(dir, "proxy.log")
	p, err := nodes.Start(name, dir, logPath, nodes.AWSEnv, bin, "proxy", "--listen", pub, "--admin", adm,
		"--admin-token", adminToken, "--upstream", "http://"+r.origin.Addr, "--config", cfgPath, "--state", filepath.Join(dir, "rooms.db"))
	if err != nil {
		return err
	}
	r.procs, r.logPaths = append(r.procs, p), append(r.logPaths, logPath)
	r.sites, r.admins = append(r.sites, "http://"+pub), append(r.admins, "http://"+adm)
	if err := waitJoined(ctx, p, "http://"+adm, 60*time.Second); err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, nodes.Tail(logPath, 8))
	}
	return nil
}

// waitJoined polls a node's admin API until it lists the room, joined to
// its stored state when it has a shared store (a node not yet joined
// issues no tokens).
func waitJoined(ctx context.Context, p *nodes.Proc, admin string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	for {
		if joined(ctx, client, admin) {
			return nil
		}
		select {
		case <-p.Done():
			return errors.New("fairgate proxy exited at start")
		case <-ctx.Done():
			return fmt.Errorf("the room was not ready within %s", within)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// joined says whether the node's admin API shows the room ready: listed,
// and joined if it names a cluster.
func joined(ctx context.Context, client *http.Client, admin string) bool {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, admin+"/rooms/"+roomName, nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var st struct {
		Cluster *waitroom.ClusterStatus `json:"cluster"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
		return false
	}
	return st.Cluster == nil || st.Cluster.Joined
}

// stop ends the nodes (SIGTERM, then SIGKILL after 10 s), the store and
// the origin.
func (r *room) stop() {
	for _, p := range r.procs {
		_ = p.Stop(syscall.SIGTERM, 10*time.Second)
	}
	if r.ddb.Running() {
		_ = r.ddb.Stop()
	}
	if r.origin != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = r.origin.Shutdown(ctx)
	}
}

// maxLogLines is how many of its warnings and errors a node's log gives
// the report.
const maxLogLines = 10

// problems is the first warnings and errors of each node's log (zap's
// JSON lines), each line named by its node, and how many more there were.
func (r *room) problems() []string {
	var out []string
	for i, path := range r.logPaths {
		b, err := os.ReadFile(path)
		if err != nil {
			out = append(out, fmt.Sprintf("node %d: %v", i+1, err))
			continue
		}
		n := 0
		for line := range strings.Lines(string(b)) {
			if !strings.Contains(line, `"level":"warn"`) && !strings.Contains(line, `"level":"error"`) {
				continue
			}
			if n++; n <= maxLogLines {
				out = append(out, fmt.Sprintf("node %d: %s", i+1, strings.TrimSpace(line)))
			}
		}
		if n > maxLogLines {
			out = append(out, fmt.Sprintf("node %d: %d more", i+1, n-maxLogLines))
		}
	}
	return out
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
