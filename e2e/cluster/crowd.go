package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairgate/fairgate/e2e/internal/drive"
	"github.com/fairgate/fairgate/e2e/internal/nodes"
	"github.com/fairgate/fairgate/e2e/internal/pass"
	"github.com/fairgate/fairgate/e2e/internal/waiting"
)

// The driver's short names for what it shares with the other e2e drivers
// (e2e/internal).
type ticket = waiting.Answer

var (
	do    = drive.Do
	sleep = drive.Sleep
)

// answer is what a node said to an admission attempt.
type answer struct {
	at     time.Time
	node   int
	status int
	// outcome is a 429's reason (busy: eligible while the bucket or the
	// budget binds; wait: not eligible yet), empty otherwise.
	outcome string
	took    time.Duration
	// decided is an admission's pass `iat`: the second the node decided
	// in, on its own clock (the budget's windows are whole seconds of it).
	decided int64
}

// usedToken is an admitted token with its solution, to replay later.
type usedToken struct {
	token, nonce, pass string
	node               int
}

// crowd is honest visitors spread over the nodes by weight: each takes a
// token from its node, solves the proof of work, follows Retry-After, and
// when admitted leaves (a new visitor takes its place). A visitor whose
// node does not answer goes to another one, as behind a load balancer that
// checks its targets.
type crowd struct {
	nodes   []*node
	weights []float64
	room    string
	client  *http.Client

	mu      sync.Mutex
	answers []answer // every admission attempt's answer
	used    []usedToken
	// admitLost are the admission attempts whose connection failed: when
	// and at which node (the answer, and maybe an admission, was lost).
	admitLost []answer
	samples   []string
	requests  atomic.Int64
	conn      atomic.Int64
	failed    atomic.Int64
	lost      atomic.Int64
	// lostUnknown are places refused as used (409) after an earlier
	// attempt with the same token went unanswered (its node died, or it
	// answered 503 while the store failed): the admission may have been
	// made and its answer lost.
	lostUnknown atomic.Int64
	double      atomic.Int64
	// unjoined are token requests answered 503 by a node that had not
	// joined its room yet: the visitor went to another node.
	unjoined atomic.Int64
	maxTook  atomic.Int64 // the slowest answer of any request, ns
}

func newCrowd(nodes []*node, weights []float64, room string) *crowd {
	return &crowd{nodes: nodes, weights: weights, room: room,
		client: &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}
}

// run keeps visitors in the room until ctx ends.
func (c *crowd) run(ctx context.Context, visitors int) {
	var wg sync.WaitGroup
	for i := range visitors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
			for ctx.Err() == nil {
				c.visit(ctx, rng)
			}
		}()
	}
	wg.Wait()
}

func (c *crowd) pick(rng *rand.Rand) int { return nodes.Pick(c.weights, rng.Float64()) }

// other picks another node than at, if there is one.
func (c *crowd) other(at int, rng *rand.Rand) int {
	if len(c.nodes) < 2 {
		return at
	}
	return (at + 1 + rng.IntN(len(c.nodes)-1)) % len(c.nodes)
}

func (c *crowd) note(format string, args ...any) {
	c.mu.Lock()
	if len(c.samples) < 8 {
		c.samples = append(c.samples, time.Now().Format("15:04:05.000 ")+fmt.Sprintf(format, args...))
	}
	c.mu.Unlock()
}

// visit is one visitor from the token to admission (or the end of ctx).
func (c *crowd) visit(ctx context.Context, rng *rand.Rand) {
	at := c.pick(rng)
	var tk ticket
	for ctx.Err() == nil {
		status, body, h, err := c.call(ctx, c.nodes[at], http.MethodPost, "/_fairgate/token", nil)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			c.conn.Add(1)
			at = c.other(at, rng)
			sleep(ctx, 200*time.Millisecond)
			continue
		}
		if status == http.StatusServiceUnavailable && h.Get("Retry-After") != "" {
			// A node that has not joined its room yet (started while the
			// store was down) places nobody: another node will.
			c.unjoined.Add(1)
			at = c.other(at, rng)
			sleep(ctx, 200*time.Millisecond)
			continue
		}
		if status != http.StatusOK || json.Unmarshal(body, &tk) != nil || tk.Token == "" {
			c.failed.Add(1)
			c.note("token at %s: %d %.100s", c.nodes[at].name, status, body)
			sleep(ctx, time.Second)
			return
		}
		break
	}
	unknown := "" // how an earlier attempt with this token went unanswered
	for ctx.Err() == nil {
		sleep(ctx, tk.Wait())
		nonce, req, err := tk.Solve(ctx)
		if err != nil {
			return
		}
		start := time.Now()
		status, body, h, err := c.call(ctx, c.nodes[at], http.MethodPost, "/_fairgate/admit", req)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			c.conn.Add(1)
			c.mu.Lock()
			c.admitLost = append(c.admitLost, answer{at: time.Now(), node: at})
			c.mu.Unlock()
			unknown = fmt.Sprintf("connection error at %s", c.nodes[at].name)
			at = c.other(at, rng)
			tk.RetryAfter = 0.2
			continue
		}
		var a struct{ Pass, Outcome string }
		if status == http.StatusOK || status == http.StatusTooManyRequests {
			_ = json.Unmarshal(body, &a)
		}
		c.mu.Lock()
		c.answers = append(c.answers, answer{at: time.Now(), node: at, status: status, outcome: a.Outcome, took: time.Since(start), decided: pass.IssuedAt(a.Pass)})
		c.mu.Unlock()
		switch status {
		case http.StatusOK:
			c.mu.Lock()
			c.used = append(c.used, usedToken{token: tk.Token, nonce: nonce, pass: a.Pass, node: at})
			c.mu.Unlock()
			return
		case http.StatusTooManyRequests:
			tk.Follow(body)
		case http.StatusServiceUnavailable:
			// The documented answer while the store is down: the place is kept.
			ra, _ := strconv.ParseFloat(h.Get("Retry-After"), 64)
			tk.RetryAfter = max(ra, 1)
			unknown = fmt.Sprintf("503 at %s", c.nodes[at].name)
		case http.StatusConflict:
			if unknown != "" {
				c.lostUnknown.Add(1)
				c.note("admit at %s: 409 used, after an unanswered attempt (%s)", c.nodes[at].name, unknown)
				return
			}
			c.lost.Add(1)
			c.note("admit at %s refused the place: %d %.100s", c.nodes[at].name, status, body)
			return
		default:
			c.lost.Add(1)
			c.note("admit at %s refused the place: %d %.100s", c.nodes[at].name, status, body)
			return
		}
	}
}

func (c *crowd) call(ctx context.Context, n *node, method, path string, body []byte) (int, []byte, http.Header, error) {
	c.requests.Add(1)
	start := time.Now()
	status, b, h, err := do(ctx, c.client, method, n.site()+path, body, "")
	if took := int64(time.Since(start)); took > c.maxTook.Load() {
		c.maxTook.Store(took)
	}
	return status, b, h, err
}

// admissions counts the admissions decided in [from, to) (by the pass's
// iat, whole seconds: callers align from and to on seconds), per node. A
// slow answer is counted in the second its node decided it in, so the
// figures do not depend on how long answers took to arrive.
func (c *crowd) admissions(from, to time.Time) (total int, perNode []int) {
	perNode = make([]int, len(c.nodes))
	c.mu.Lock()
	defer c.mu.Unlock()
	lo, hi := from.Unix(), to.Unix()
	if from.After(time.Unix(lo, 0)) {
		lo++ // a second only partly in the span is left out
	}
	for _, a := range c.answers {
		if a.status == http.StatusOK && a.decided >= lo && a.decided < hi {
			total++
			perNode[a.node]++
		}
	}
	return total, perNode
}

// answersBetween counts answers by status in [from, to), with the slowest.
// The 429s are counted by outcome and node ("429 busy@node1").
func (c *crowd) answersBetween(from, to time.Time) (map[string]int, time.Duration) {
	out := map[string]int{}
	var slowest time.Duration
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range c.answers {
		if !a.at.Before(from) && a.at.Before(to) {
			key := strconv.Itoa(a.status)
			if a.status == http.StatusTooManyRequests {
				key += " " + a.outcome + "@" + c.nodes[a.node].name
			}
			out[key]++
			slowest = max(slowest, a.took)
		}
	}
	return out, slowest
}

// firstAdmissions is, per node, how long after from its first admission
// was answered (0: none yet).
func (c *crowd) firstAdmissions(from time.Time) []time.Duration {
	out := make([]time.Duration, len(c.nodes))
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range c.answers {
		if a.status != http.StatusOK || a.at.Before(from) {
			continue
		}
		if d := a.at.Sub(from); out[a.node] == 0 || d < out[a.node] {
			out[a.node] = d
		}
	}
	return out
}

// admitsCut counts the admission attempts at node whose connection failed
// in [from, to).
func (c *crowd) admitsCut(node int, from, to time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, a := range c.admitLost {
		if a.node == node && !a.at.Before(from) && a.at.Before(to) {
			n++
		}
	}
	return n
}

func (c *crowd) usedTokens() []usedToken {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]usedToken(nil), c.used...)
}
