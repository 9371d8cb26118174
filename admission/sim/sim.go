// Package sim simulates a sale through the real admission gate with
// simulated time, to show that the queue is fair: the pre-queue is a lottery,
// later arrivals wait longer, refreshing gains nothing, ignoring nxt costs,
// and extra tokens buy only what their proofs of work pay for.
package sim

import (
	"container/heap"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/fairgate/fairgate/admission"
)

// Config describes one simulated sale.
type Config struct {
	// PreQueue visitors arrive over PreQueueSpan before the start.
	PreQueue     int
	PreQueueSpan time.Duration
	// Arrivals visitors arrive over ArrivalSpan after the start.
	Arrivals    int
	ArrivalSpan time.Duration
	// Rate is the fixed admission rate per second.
	Rate float64
	// Jitter is the largest one-way network delay; each request draws
	// uniformly from [0, Jitter).
	Jitter time.Duration
	// Difficulty is the proof-of-work difficulty in bits.
	Difficulty int
	// PollerShare of visitors refresh their page ten times per backoff.
	PollerShare float64
	// CheaterShare of visitors ignore nxt: they attempt every CheaterEvery
	// for their first CheaterAttempts attempts, then give up and follow nxt.
	// (One who never gives up is never admitted: each penalty moves their
	// entry further back than the clock advances.)
	CheaterShare    float64
	CheaterEvery    time.Duration
	CheaterAttempts int
	// Horizon bounds the simulated time after the start.
	Horizon time.Duration
	// Seed makes a run reproducible.
	Seed uint64
}

// DefaultConfig is the scenario of issue 2: 100k in the pre-queue, 100k
// arriving over the first 10 minutes, 0-500 ms jitter, 100 admissions/s.
var DefaultConfig = Config{
	PreQueue: 100_000, PreQueueSpan: 10 * time.Minute,
	Arrivals: 100_000, ArrivalSpan: 10 * time.Minute,
	Rate: 100, Jitter: 500 * time.Millisecond, Difficulty: 4,
	PollerShare: 0.05, CheaterShare: 0.05, CheaterEvery: time.Second, CheaterAttempts: 30,
	Horizon: 12 * time.Hour, Seed: 1,
}

// Kind is how a simulated visitor behaves.
type Kind int

// Visitor kinds.
const (
	Honest  Kind = iota // attempts at nxt
	Poller              // attempts at nxt, and refreshes ten times per backoff
	Cheater             // attempts every CheaterEvery, whatever nxt says
)

func (k Kind) String() string { return [...]string{"honest", "poller", "cheater"}[k] }

// Visitor is one simulated visitor's history.
type Visitor struct {
	ID       int
	Kind     Kind
	PreQueue bool
	Arrive   time.Duration // relative to the sale start
	Admitted time.Duration // relative to the sale start; valid when Done
	Done     bool
	Attempts int
	Polls    int
	Hashes   uint64 // proof-of-work hashes spent
}

// Run is the outcome of one simulation.
type Run struct {
	Config   Config
	Visitors []Visitor
	// Requests counts every request the gate answered, by kind.
	Issued, Attempts, Polls int
	Duration                time.Duration
}

type event struct {
	at      time.Time
	visitor int
	poll    bool
}

type events []event

func (e events) Len() int           { return len(e) }
func (e events) Less(i, j int) bool { return e[i].at.Before(e[j].at) }
func (e events) Swap(i, j int)      { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)        { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

type state struct {
	gate   *admission.Gate
	token  string
	claims *admission.WaitClaims
	nonce  string
	solved int // the difficulty nonce solves, -1 for none
	net    *rand.Rand
}

// Simulate runs one sale in which the visitors drawn as the active kind
// behave as that kind and everyone else is honest. Tickets, arrivals and
// jitter are the same whatever the active kind, so a run with Honest active
// is the baseline each behaviour is paired against, visitor by visitor.
func Simulate(ctx context.Context, cfg Config, active Kind) (*Run, error) {
	start := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	now := start.Add(-cfg.PreQueueSpan)
	keys, err := simKeys(cfg.Seed)
	if err != nil {
		return nil, err
	}
	room, err := admission.NewRoom(admission.RoomConfig{
		Name: "sim", State: admission.StateScheduled, SaleStart: start,
		Rate: cfg.Rate, Burst: cfg.Rate, Tau: time.Minute, Adaptive: true,
		Difficulty: cfg.Difficulty, Window: time.Minute,
	}, now)
	if err != nil {
		return nil, err
	}
	ledger := admission.NewMemoryLedger(cfg.PreQueue+cfg.Arrivals+1, func() time.Time { return now })
	policy := admission.Policy{}

	n := cfg.PreQueue + cfg.Arrivals
	run := &Run{Config: cfg, Visitors: make([]Visitor, n)}
	states := make([]state, n)
	setup := rand.New(rand.NewPCG(cfg.Seed, 0))
	q := make(events, 0, n)
	for i := range n {
		v := &run.Visitors[i]
		v.ID = i
		v.PreQueue = i < cfg.PreQueue
		if v.PreQueue {
			v.Arrive = -time.Duration(setup.Float64() * float64(cfg.PreQueueSpan))
		} else {
			v.Arrive = time.Duration(setup.Float64() * float64(cfg.ArrivalSpan))
		}
		// Draw the kind in every run so the runs stay in step.
		kind := Honest
		switch draw := setup.Float64(); {
		case draw < cfg.PollerShare:
			kind = Poller
		case draw < cfg.PollerShare+cfg.CheaterShare:
			kind = Cheater
		}
		if kind == active {
			v.Kind = kind
		}
		states[i] = state{
			gate:   admission.NewGate(keys, policy, ledger, admission.WithRandom(visitorStream(cfg.Seed, i))),
			solved: -1,
			net:    rand.New(rand.NewPCG(cfg.Seed, uint64(i)+1)),
		}
		q = append(q, event{at: start.Add(v.Arrive), visitor: i})
	}
	heap.Init(&q)

	nextTick := now
	for q.Len() > 0 {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("simulation interrupted: %w", err)
		}
		ev := heap.Pop(&q).(event)
		if ev.at.Sub(start) > cfg.Horizon {
			break
		}
		for !nextTick.After(ev.at) {
			room.Tick(nextTick)
			nextTick = nextTick.Add(time.Second)
		}
		now = ev.at
		v, st := &run.Visitors[ev.visitor], &states[ev.visitor]
		if v.Done {
			continue
		}
		switch {
		case st.token == "":
			tk, err := st.gate.Issue(room, admission.Visitor{}, now)
			if err != nil {
				return nil, err
			}
			run.Issued++
			st.token, st.claims = tk.Token, tk.Claims
			if v.Kind == Poller {
				heap.Push(&q, event{at: now.Add(pollEvery(st.claims, now)), visitor: ev.visitor, poll: true})
			}
		case ev.poll:
			// A refresh: the page reads its cookie and asks for the token.
			if _, err := st.gate.Resume(room, st.token, admission.Visitor{}, now); err != nil {
				return nil, fmt.Errorf("visitor %d refresh: %w", v.ID, err)
			}
			v.Polls++
			run.Polls++
			heap.Push(&q, event{at: now.Add(pollEvery(st.claims, now)), visitor: ev.visitor, poll: true})
			continue
		default:
			if st.solved != st.claims.Dif {
				nonce, err := admission.Solve(ctx, st.claims.Ch, st.claims.Dif)
				if err != nil {
					return nil, err
				}
				st.nonce, st.solved = strconv.FormatUint(nonce, 10), st.claims.Dif
				v.Hashes += nonce + 1
			}
			v.Attempts++
			run.Attempts++
			d := st.gate.Decide(ctx, room, admission.Attempt{Token: st.token, Nonce: st.nonce, Now: now})
			switch d.Outcome {
			case admission.OutcomeAdmit:
				v.Done, v.Admitted = true, now.Sub(start)
				continue
			case admission.OutcomeWait, admission.OutcomeBusy, admission.OutcomeEarly:
				st.token, st.claims = d.Ticket.Token, d.Ticket.Claims
			default:
				return nil, fmt.Errorf("visitor %d at %v: %v: %v", v.ID, now.Sub(start), d.Outcome, d.Err)
			}
		}
		next := st.claims.NextAttempt()
		if v.Kind == Cheater && v.Attempts < cfg.CheaterAttempts {
			next = now.Add(cfg.CheaterEvery)
		}
		heap.Push(&q, event{at: next.Add(jitter(st.net, cfg.Jitter)), visitor: ev.visitor})
	}
	run.Duration = now.Sub(start)
	return run, nil
}

// pollEvery is a tenth of the time to the next attempt, at least 100 ms.
func pollEvery(c *admission.WaitClaims, now time.Time) time.Duration {
	return max(c.NextAttempt().Sub(now)/10, 100*time.Millisecond)
}

func jitter(r *rand.Rand, max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	return time.Duration(r.Int64N(int64(max)))
}

// visitorStream gives each visitor their own random stream, so their
// tickets do not depend on what other visitors did before them.
func visitorStream(seed uint64, i int) *rand.ChaCha8 {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	binary.LittleEndian.PutUint64(s[8:], uint64(i))
	return rand.NewChaCha8(s)
}

func simKeys(seed uint64) (*admission.KeyRing, error) {
	secret := func(label string) []byte {
		s := sha256.Sum256([]byte(label + strconv.FormatUint(seed, 10)))
		return s[:]
	}
	return admission.NewKeyRing("sim", map[string][]byte{"sim": secret("sign")}, secret("lottery"))
}
