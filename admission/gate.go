package admission

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"time"

	"github.com/google/uuid"
)

// ErrIdentity means the token belongs to another visitor.
var ErrIdentity = errors.New("token belongs to another visitor")

// Policy is how a gate treats waiting visitors. Zero fields take the
// defaults of DefaultPolicy.
type Policy struct {
	// TokenTTL is how long a waiting token lives after each correct attempt.
	TokenTTL time.Duration
	// PassTTL is the session length a pass grants.
	PassTTL time.Duration
	// MinBackoff and MaxBackoff bound the time between attempts.
	MinBackoff, MaxBackoff time.Duration
	// BackoffShare is the share of the expected wait a visitor is told to
	// wait before the next attempt: smaller means more attempts and a
	// quicker reaction once eligible.
	BackoffShare float64
	// BusyBackoff is the wait of an eligible visitor the bucket turned away.
	BusyBackoff time.Duration
	// EarlyTolerance forgives attempts this little before nxt (timer skew).
	EarlyTolerance time.Duration
	// StrikeLimit is how many early attempts bring a penalty.
	StrikeLimit int
	// Penalty is how far a penalty pushes the entry back, in clock units
	// (one unit is one mean wait).
	Penalty float64
	// PenaltyDifficulty is the difficulty a penalty adds, in bits.
	PenaltyDifficulty int
	// MaxDifficulty caps what penalties raise the difficulty to: 20 bits is
	// about a million hashes, a few seconds in a browser's worker.
	MaxDifficulty int
	// Leeway is the clock skew tolerated on token times.
	Leeway time.Duration
}

// DefaultPolicy is what zero Policy fields mean.
var DefaultPolicy = Policy{
	TokenTTL:          10 * time.Minute,
	PassTTL:           15 * time.Minute,
	MinBackoff:        2 * time.Second,
	MaxBackoff:        30 * time.Second,
	BackoffShare:      0.1,
	BusyBackoff:       time.Second,
	EarlyTolerance:    500 * time.Millisecond,
	StrikeLimit:       3,
	Penalty:           0.5,
	PenaltyDifficulty: 2,
	MaxDifficulty:     20,
	Leeway:            5 * time.Second,
}

func (p Policy) withDefaults() Policy {
	d := DefaultPolicy
	set := func(dst *time.Duration, v time.Duration) {
		if v > 0 {
			*dst = v
		}
	}
	set(&d.TokenTTL, p.TokenTTL)
	set(&d.PassTTL, p.PassTTL)
	set(&d.MinBackoff, p.MinBackoff)
	set(&d.MaxBackoff, p.MaxBackoff)
	set(&d.BusyBackoff, p.BusyBackoff)
	set(&d.EarlyTolerance, p.EarlyTolerance)
	set(&d.Leeway, p.Leeway)
	if p.BackoffShare > 0 {
		d.BackoffShare = p.BackoffShare
	}
	if p.StrikeLimit > 0 {
		d.StrikeLimit = p.StrikeLimit
	}
	if p.Penalty > 0 {
		d.Penalty = p.Penalty
	}
	if p.PenaltyDifficulty > 0 {
		d.PenaltyDifficulty = p.PenaltyDifficulty
	}
	if p.MaxDifficulty > 0 {
		d.MaxDifficulty = min(p.MaxDifficulty, MaxDifficulty)
	}
	if d.MaxBackoff < d.MinBackoff {
		d.MaxBackoff = d.MinBackoff
	}
	return d
}

// Gate issues waiting tokens and decides admission attempts. It holds no
// per-visitor state: everything about a visitor is in their token, except the
// ledger of used token ids.
type Gate struct {
	codec  *Codec
	policy Policy
	ledger Ledger
	random io.Reader
	jitter func() float64
}

// GateOption configures a Gate.
type GateOption func(*Gate)

// WithRandom makes the gate draw ids, lottery tickets and challenges from r
// instead of crypto/rand, and jitter from a generator seeded by r. Only for
// simulations and tests: predictable tickets are a broken queue.
func WithRandom(r io.Reader) GateOption {
	return func(g *Gate) {
		g.random = r
		var seed [32]byte
		_, _ = io.ReadFull(r, seed[:])
		g.jitter = mrand.New(mrand.NewChaCha8(seed)).Float64
	}
}

// NewGate returns a gate signing with keys and remembering used tokens in ledger.
func NewGate(keys *KeyRing, policy Policy, ledger Ledger, opts ...GateOption) *Gate {
	policy = policy.withDefaults()
	g := &Gate{
		codec:  NewCodec(keys, policy.Leeway),
		policy: policy,
		ledger: ledger,
		random: rand.Reader,
		jitter: mrand.Float64,
	}
	for _, opt := range opts {
		opt(g)
	}
	return g
}

// Codec is the gate's token codec.
func (g *Gate) Codec() *Codec { return g.codec }

// Policy is the gate's policy with defaults filled in.
func (g *Gate) Policy() Policy { return g.policy }

// Ticket is a waiting token and what the waiting page needs of it.
type Ticket struct {
	Token  string
	Claims *WaitClaims
	// Estimate is the public wait estimate; EstimateKnown is false while the
	// room is paused or closed.
	Estimate      time.Duration
	EstimateKnown bool
}

// AnonymousPrefix starts the random subject of a visitor without a login.
const AnonymousPrefix = "anon:"

// Visitor is who is asking, as the gateway established it.
type Visitor struct {
	// Subject is the verified identity, or empty for an anonymous visitor
	// (who gets a random one at issue and is not checked after).
	Subject string
	// Binding is a keyed hash of the client's network, or empty.
	Binding string
}

// matches reports whether the token belongs to this visitor.
func (v Visitor) matches(c *WaitClaims) bool {
	return (v.Subject == "" || c.Subject == v.Subject) && (c.Bnd == "" || c.Bnd == v.Binding)
}

// Issue gives a new visitor a waiting token.
func (g *Gate) Issue(room *Room, who Visitor, now time.Time) (Ticket, error) {
	subject := who.Subject
	view := room.View(now)
	id, err := uuid.NewV7FromReader(g.random)
	if err != nil {
		return Ticket{}, fmt.Errorf("making token id: %w", err)
	}
	if subject == "" {
		anon, err := g.randomText(base64.RawURLEncoding, 16)
		if err != nil {
			return Ticket{}, err
		}
		subject = AnonymousPrefix + anon
	}
	lot, err := g.randomText(base64.StdEncoding, 16)
	if err != nil {
		return Ticket{}, err
	}
	ch, err := g.randomText(base64.RawURLEncoding, challengeBytes)
	if err != nil {
		return Ticket{}, err
	}
	claims := &WaitClaims{
		Registered: Registered{
			ID:       id.String(),
			Subject:  subject,
			Audience: view.Name,
			IssuedAt: now.Unix(),
		},
		Lot: lot,
		Srv: view.Clock.At(now),
		Ch:  ch,
		Dif: view.Difficulty,
		Bnd: who.Binding,
	}
	g.scheduleNext(room, &view, claims, g.backoff(&view, now), now)
	return g.ticket(&view, claims, now)
}

// Resume verifies a visitor's existing token and returns it unchanged: a
// refreshed page costs nothing and changes nothing.
func (g *Gate) Resume(room *Room, token string, who Visitor, now time.Time) (Ticket, error) {
	claims, err := g.codec.ParseWait(token, room.Name(), now)
	if err != nil {
		return Ticket{}, err
	}
	if !who.matches(claims) {
		return Ticket{}, ErrIdentity
	}
	view := room.View(now)
	t := Ticket{Token: token, Claims: claims}
	t.Estimate, t.EstimateKnown = view.EstimateWait(now)
	return t, nil
}

// Outcome is the result of an admission attempt.
type Outcome int

// Outcomes of Decide.
const (
	// OutcomeAdmit: eligible, within budget, token consumed; Pass is set.
	OutcomeAdmit Outcome = iota
	// OutcomeWait: not eligible yet (or the room is paused); keep waiting.
	OutcomeWait
	// OutcomeBusy: eligible, but the admission bucket is empty; retry soon.
	OutcomeBusy
	// OutcomeEarly: attempted before nxt; a strike, perhaps a penalty.
	OutcomeEarly
	// OutcomeInvalid: the token or solution is bad; Err says why.
	OutcomeInvalid
	// OutcomeReused: the token was already used for an admission.
	OutcomeReused
	// OutcomeClosed: the room is closed.
	OutcomeClosed
	// OutcomeUnavailable: the ledger failed; Err says how.
	OutcomeUnavailable
)

var outcomeNames = [...]string{"admit", "wait", "busy", "early", "invalid", "reused", "closed", "unavailable"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// Attempt is one admission attempt.
type Attempt struct {
	Token string
	// Nonce is the proof-of-work solution, decimal.
	Nonce string
	// Visitor must match the token's subject and binding.
	Visitor Visitor
	Now     time.Time
}

// Decision is what Decide concluded.
type Decision struct {
	Outcome Outcome
	// Err is the reason for OutcomeInvalid and OutcomeUnavailable.
	Err error
	// Claims are the verified claims of the token attempted, nil if it
	// did not verify.
	Claims *WaitClaims
	// Ticket is the re-signed waiting token for wait, busy and early.
	Ticket Ticket
	// Pass and PassClaims are set for OutcomeAdmit.
	Pass       string
	PassClaims *PassClaims
	// RetryAfter is when to try again, for every outcome that may.
	RetryAfter time.Duration
}

// Decide runs one admission attempt (docs/DESIGN.md, "The decision").
func (g *Gate) Decide(ctx context.Context, room *Room, a Attempt) Decision {
	now := a.Now
	claims, err := g.codec.ParseWait(a.Token, room.Name(), now)
	if err != nil {
		return Decision{Outcome: OutcomeInvalid, Err: err}
	}
	if !a.Visitor.matches(claims) {
		return Decision{Outcome: OutcomeInvalid, Err: ErrIdentity, Claims: claims}
	}
	if err := VerifyWork(claims.Ch, claims.Dif, a.Nonce); err != nil {
		return Decision{Outcome: OutcomeInvalid, Err: err, Claims: claims}
	}
	view := room.View(now)
	if view.State == StateClosed {
		return Decision{Outcome: OutcomeClosed, Claims: claims}
	}
	if now.Add(g.policy.EarlyTolerance).Before(claims.NextAttempt()) {
		return g.strike(room, &view, claims, now)
	}
	switch view.State {
	case StatePaused, StateScheduled: // View turns scheduled into queue at the start
		return g.wait(room, &view, claims, OutcomeWait, g.backoff(&view, now), now)
	case StateQueue:
		if view.Clock.At(now)-claims.Srv < Threshold(g.codec.keys.Lottery(claims.Lot)) {
			return g.wait(room, &view, claims, OutcomeWait, g.backoff(&view, now), now)
		}
		room.ObserveEligible(now)
	}
	used, err := g.ledger.Used(ctx, claims.ID)
	switch {
	case err != nil:
		return Decision{Outcome: OutcomeUnavailable, Err: fmt.Errorf("checking token ledger: %w", err), RetryAfter: g.policy.BusyBackoff, Claims: claims}
	case used:
		return Decision{Outcome: OutcomeReused, Claims: claims}
	}
	if !room.TakeAdmission(now) {
		return g.wait(room, &view, claims, OutcomeBusy, g.jittered(g.policy.BusyBackoff), now)
	}
	fresh, err := g.ledger.Consume(ctx, claims.ID, claims.Expiry().Add(g.policy.Leeway))
	switch {
	case err != nil:
		return Decision{Outcome: OutcomeUnavailable, Err: fmt.Errorf("consuming token: %w", err), RetryAfter: g.policy.BusyBackoff, Claims: claims}
	case !fresh:
		return Decision{Outcome: OutcomeReused, Claims: claims}
	}
	pc := &PassClaims{
		Registered: Registered{
			Subject:   claims.Subject,
			Audience:  claims.Audience,
			IssuedAt:  now.Unix(),
			ExpiresAt: now.Add(g.policy.PassTTL).Unix(),
		},
		Wid: claims.ID,
	}
	pass, err := g.SignPass(pc)
	if err != nil {
		return Decision{Outcome: OutcomeUnavailable, Err: err, Claims: claims}
	}
	return Decision{Outcome: OutcomeAdmit, Pass: pass, PassClaims: pc, Claims: claims}
}

// Requeue sends an admitted visitor back to waiting without a strike, when
// the admission could not complete (the admission hook said the seat service
// is full): their token is released and re-signed with a fresh nxt.
func (g *Gate) Requeue(ctx context.Context, room *Room, claims *WaitClaims, now time.Time) Decision {
	if err := g.ledger.Release(ctx, claims.ID); err != nil {
		return Decision{Outcome: OutcomeUnavailable, Err: fmt.Errorf("releasing token: %w", err), Claims: claims}
	}
	view := room.View(now)
	return g.wait(room, &view, claims, OutcomeWait, g.backoff(&view, now), now)
}

// SignPass signs a pass, giving it a fresh id. The gateway calls it again
// to add the session id the admission hook returned.
func (g *Gate) SignPass(pc *PassClaims) (string, error) {
	id, err := uuid.NewV7FromReader(g.random)
	if err != nil {
		return "", fmt.Errorf("making pass id: %w", err)
	}
	pc.ID = id.String()
	return g.codec.Sign(pc)
}

// VerifyPass verifies a pass for room at now.
func (g *Gate) VerifyPass(room, token string, now time.Time) (*PassClaims, error) {
	return g.codec.ParsePass(token, room, now)
}

// strike answers an attempt made before nxt: one more strike, no earlier
// next attempt, and at StrikeLimit a penalty: the entry moves back by
// Penalty clock units and the difficulty rises. Hammering is therefore
// strictly worse than waiting, without remembering anything server-side.
func (g *Gate) strike(room *Room, view *View, claims *WaitClaims, now time.Time) Decision {
	claims.Pen++
	if claims.Pen >= g.policy.StrikeLimit {
		claims.Pen = 0
		claims.Srv = math.Max(claims.Srv, view.Clock.At(now)) + g.policy.Penalty
		claims.IssuedAt = now.Unix()
		claims.Dif = max(claims.Dif, min(claims.Dif+g.policy.PenaltyDifficulty, g.policy.MaxDifficulty))
	}
	next := claims.NextAttempt().Sub(now)
	return g.wait(room, view, claims, OutcomeEarly, max(next, g.backoff(view, now)), now)
}

func (g *Gate) wait(room *Room, view *View, claims *WaitClaims, outcome Outcome, backoff time.Duration, now time.Time) Decision {
	g.scheduleNext(room, view, claims, backoff, now)
	t, err := g.ticket(view, claims, now)
	if err != nil {
		return Decision{Outcome: OutcomeUnavailable, Err: err, Claims: claims}
	}
	return Decision{Outcome: outcome, Ticket: t, RetryAfter: claims.NextAttempt().Sub(now), Claims: claims}
}

// scheduleNext sets nxt and extends exp past it, and records the new
// presence for the population estimate.
func (g *Gate) scheduleNext(room *Room, view *View, claims *WaitClaims, backoff time.Duration, now time.Time) {
	if view.State == StateOpen {
		backoff = 0 // no queue: try at once
	}
	next := now.Add(backoff)
	if view.State == StateScheduled && now.Before(view.SaleStart) {
		// Bring the pre-queue in just after the start, spread over the
		// shortest backoff so the start is no thundering herd.
		atStart := view.SaleStart.Add(time.Duration(g.jitter() * float64(g.policy.MinBackoff)))
		if atStart.Before(next) {
			next = atStart
		}
	}
	// Little's law counts each visitor's presence once: an early attempt
	// was already counted up to its old nxt, so it adds only the extension.
	// Otherwise hammering would inflate the population and slow the clock
	// for everyone.
	counted := now
	if prev := claims.NextAttempt(); prev.After(now) {
		counted = prev
	}
	claims.Nxt = next.UnixMilli()
	claims.ExpiresAt = next.Add(g.policy.TokenTTL).Unix()
	if next.After(counted) {
		room.ObserveBackoff(now, next.Sub(counted))
	}
}

// backoff is BackoffShare of the expected wait, within bounds, jittered.
func (g *Gate) backoff(view *View, now time.Time) time.Duration {
	b := g.policy.MaxBackoff
	if est, ok := view.EstimateWait(now); ok {
		b = time.Duration(g.policy.BackoffShare * float64(est))
	}
	b = min(max(b, g.policy.MinBackoff), g.policy.MaxBackoff)
	return min(g.jittered(b), g.policy.MaxBackoff)
}

// jittered spreads d over [0.75 d, 1.25 d) so attempts do not synchronise.
func (g *Gate) jittered(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.75 + 0.5*g.jitter()))
}

func (g *Gate) ticket(view *View, claims *WaitClaims, now time.Time) (Ticket, error) {
	token, err := g.codec.Sign(claims)
	if err != nil {
		return Ticket{}, err
	}
	t := Ticket{Token: token, Claims: claims}
	t.Estimate, t.EstimateKnown = view.EstimateWait(now)
	return t, nil
}

func (g *Gate) randomText(enc *base64.Encoding, n int) (string, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(g.random, b); err != nil {
		return "", fmt.Errorf("reading random bytes: %w", err)
	}
	return enc.EncodeToString(b), nil
}
