package admission

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/google/uuid"
)

// ErrIdentity means the token belongs to another visitor.
var ErrIdentity = errors.New("token belongs to another visitor")

// ErrLane means the token waits in another lane than the room judging it:
// the visitor's login no longer (or never did) grant that lane.
var ErrLane = errors.New("token belongs to another lane")

// Policy is how a gate treats waiting visitors. Zero fields take the
// defaults of DefaultPolicy.
type Policy struct {
	// TokenTTL is how long a waiting token lives past its next checkpoint.
	TokenTTL time.Duration
	// PlaceTTL is the longest a place in line lasts from its first token:
	// no version of the token is valid after it, and the ledger remembers
	// an admitted place until then (plus Leeway).
	PlaceTTL time.Duration
	// PassTTL is the session length a pass grants.
	PassTTL time.Duration
	// MinBackoff and MaxBackoff bound the time between checkpoints.
	MinBackoff, MaxBackoff time.Duration
	// BackoffShare is the share of the time already waited that the next
	// checkpoint lies ahead: early in the wait, when most draws come due,
	// checkpoints are close together; later they spread to MaxBackoff.
	BackoffShare float64
	// Leeway is the clock skew tolerated on token times.
	Leeway time.Duration
}

// DefaultPolicy is what zero Policy fields mean.
var DefaultPolicy = Policy{
	TokenTTL:     10 * time.Minute,
	PlaceTTL:     6 * time.Hour,
	PassTTL:      15 * time.Minute,
	MinBackoff:   2 * time.Second,
	MaxBackoff:   30 * time.Second,
	BackoffShare: 0.1,
	Leeway:       5 * time.Second,
}

func (p Policy) withDefaults() Policy {
	d := DefaultPolicy
	set := func(dst *time.Duration, v time.Duration) {
		if v > 0 {
			*dst = v
		}
	}
	set(&d.TokenTTL, p.TokenTTL)
	set(&d.PlaceTTL, p.PlaceTTL)
	set(&d.PassTTL, p.PassTTL)
	set(&d.MinBackoff, p.MinBackoff)
	set(&d.MaxBackoff, p.MaxBackoff)
	set(&d.Leeway, p.Leeway)
	if p.BackoffShare > 0 {
		d.BackoffShare = p.BackoffShare
	}
	if d.MaxBackoff < d.MinBackoff {
		d.MaxBackoff = d.MinBackoff
	}
	return d
}

// Gate issues waiting tokens and decides admission attempts. It holds no
// per-visitor state: everything about a waiting place is in its token, except
// the ledger of places admitted or holding an admission slot.
type Gate struct {
	codec  *Codec
	policy Policy
	ledger Ledger
	random io.Reader
	// lotteryGrid and fifoGrid are the checkpoint grids' shapes in each
	// order, fixed by the policy.
	lotteryGrid, fifoGrid gridShape
	// noTabPasses: see WithoutTabPasses.
	noTabPasses bool
}

// GateOption configures a Gate.
type GateOption func(*Gate)

// WithRandom makes the gate draw ids, lottery tickets and challenges from r
// instead of crypto/rand. Only for simulations and tests: predictable
// tickets are a broken queue.
func WithRandom(r io.Reader) GateOption {
	return func(g *Gate) { g.random = r }
}

// WithoutTabPasses makes the gate give an admitted place's pass again only
// to the token version that used it, not to the other tokens of its login:
// for a gateway whose admission hook decides after the pass is made (a
// refusal sends the place back to waiting, and another tab must not be
// holding its pass meanwhile).
func WithoutTabPasses() GateOption {
	return func(g *Gate) { g.noTabPasses = true }
}

// NewGate returns a gate signing with keys and remembering used tokens in ledger.
func NewGate(keys *KeyRing, policy Policy, ledger Ledger, opts ...GateOption) *Gate {
	policy = policy.withDefaults()
	g := &Gate{
		codec:  NewCodec(keys, policy.Leeway),
		policy: policy,
		ledger: ledger,
		random: rand.Reader,
	}
	g.lotteryGrid = newGridShape(policy.MinBackoff, policy.MaxBackoff, policy.BackoffShare)
	// Evenly spaced and fine: the gate names a few of a fifo draw's points
	// (Gate.fifoNext), judging walks them all.
	g.fifoGrid = newGridShape(fifoGrain, fifoGrain, policy.BackoffShare)
	for _, opt := range opts {
		opt(g)
	}
	return g
}

// Codec is the gate's token codec.
func (g *Gate) Codec() *Codec { return g.codec }

// Policy is the gate's policy with defaults filled in.
func (g *Gate) Policy() Policy { return g.policy }

// WaitToken is a waiting token and what the waiting page needs of it.
type WaitToken struct {
	// Token is a compact JWS the gate signed, or verified as one it
	// signed: base64url parts joined by dots, so only letters, digits and
	// -_. (FuzzParseWait holds every token ParseWait accepts to that).
	Token  string
	Claims *WaitClaims
	// Estimate is the public wait estimate; EstimateKnown is false while the
	// room is paused or closed.
	Estimate      time.Duration
	EstimateKnown bool
	// Wake is when the page should ask next: nxt, or sooner while the
	// room is scheduled (at most MaxBackoff ahead), so that a sale start
	// moved earlier reaches a page sleeping towards the old one. Asking
	// before nxt is answered "early" and costs nothing.
	Wake time.Time
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

// matches reports whether the token belongs to this visitor. A token
// issued to a login needs that login: with identity optional, a request
// without one must not carry a logged-in visitor's place off in their name.
func (v Visitor) matches(c *WaitClaims) bool {
	subject := c.Subject == v.Subject || (v.Subject == "" && strings.HasPrefix(c.Subject, AnonymousPrefix))
	return subject && (c.Bnd == "" || c.Bnd == v.Binding)
}

// Issue gives a new visitor a waiting token, without a context: see
// IssueContext.
func (g *Gate) Issue(room *Room, who Visitor, now time.Time) (WaitToken, error) {
	return g.IssueContext(context.Background(), room, who, now)
}

// IssueContext gives a new visitor a waiting token. In a fifo room it takes
// an arrival rank, which may wait on a shared store.
func (g *Gate) IssueContext(ctx context.Context, room *Room, who Visitor, now time.Time) (WaitToken, error) {
	subject := who.Subject
	view := room.View(now)
	id, err := uuid.NewV7FromReader(g.random)
	if err != nil {
		return WaitToken{}, fmt.Errorf("making token id: %w", err)
	}
	if subject == "" {
		anon, err := g.randomText(base64.RawURLEncoding, 16)
		if err != nil {
			return WaitToken{}, err
		}
		subject = AnonymousPrefix + anon
	}
	// A verified subject draws once per room, however many tokens they take;
	// an anonymous visitor draws at random.
	var lot string
	if who.Subject != "" {
		lot = g.codec.keys.IdentityLot(view.Name, who.Subject)
	} else if lot, err = g.randomText(base64.StdEncoding, 16); err != nil {
		return WaitToken{}, err
	}
	ch, err := g.randomText(base64.RawURLEncoding, challengeBytes)
	if err != nil {
		return WaitToken{}, err
	}
	claims := &WaitClaims{
		Registered: Registered{
			ID:       id.String(),
			Subject:  subject,
			Audience: view.Name,
			IssuedAt: now.Unix(),
		},
		Lot:  lot,
		Srv:  view.Clock.At(now),
		Ch:   ch,
		Dif:  view.Difficulty,
		Bnd:  who.Binding,
		Lane: view.Lane,
	}
	// A fifo place takes no rank here: taking a token costs nothing, and a
	// rank moves everyone after it. It takes one at its first judged
	// attempt, with its work solved (Gate.claim).
	next := now
	switch {
	case view.State == StateOpen:
	case view.Order == OrderFIFO:
		// The claim is the one checkpoint off the grid, one backoff after
		// the token, unjittered: ranks are claimed in the order tokens were
		// taken (and a pre-queue's grid starts at the sale start anyway).
		next = ceilMilli(now.Add(g.policy.MinBackoff))
	default:
		next = g.nextCheckpoint(&view, claims, now.Add(g.policy.MinBackoff))
	}
	g.schedule(claims, next)
	return g.ticket(&view, claims, now)
}

// Resume verifies a visitor's existing token and returns it unchanged: a
// refreshed page costs nothing and changes nothing.
func (g *Gate) Resume(room *Room, token string, who Visitor, now time.Time) (WaitToken, error) {
	claims, err := g.codec.ParseWait(token, room.Name(), now)
	if err != nil {
		return WaitToken{}, err
	}
	if !who.matches(claims) {
		return WaitToken{}, ErrIdentity
	}
	view := room.View(now)
	if claims.Lane != view.Lane {
		return WaitToken{}, ErrLane
	}
	t := WaitToken{Token: token, Claims: claims, Wake: g.wake(&view, claims, now)}
	t.Estimate, t.EstimateKnown = view.EstimateWait(now)
	return t, nil
}

// wake is WaitToken.Wake.
func (g *Gate) wake(view *View, claims *WaitClaims, now time.Time) time.Time {
	next := claims.NextAttempt()
	if view.State == StateScheduled && next.Sub(now) > g.policy.MaxBackoff {
		return now.Add(g.policy.MaxBackoff)
	}
	return next
}

// Outcome is the result of an admission attempt.
type Outcome int

// Outcomes of Decide.
const (
	// OutcomeAdmit: eligible, within budget, place used; Pass is set.
	OutcomeAdmit Outcome = iota
	// OutcomeWait: not eligible at any checkpoint up to now (or the room is
	// paused); keep waiting until the next one.
	OutcomeWait
	// OutcomeBusy: eligible while the bucket binds; the place holds the
	// admission slot the answer names.
	OutcomeBusy
	// OutcomeEarly: presented before its checkpoint; the same token back,
	// nothing judged, nothing lost.
	OutcomeEarly
	// OutcomeInvalid: the token or solution is bad; Err says why.
	OutcomeInvalid
	// OutcomeReused: the place was already admitted.
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
	// Next is the waiting token to hold next, for wait, busy and early.
	Next WaitToken
	// Pass and PassClaims are set for OutcomeAdmit.
	Pass       string
	PassClaims *PassClaims
	// Again is set when the admission was made by an earlier attempt with
	// the same token whose answer was lost: Pass is the pass it was given.
	Again bool
	// RetryAfter is when to try again, for every outcome that may.
	RetryAfter time.Duration
}

// unavailableRetry is how soon to retry after the ledger failed.
const unavailableRetry = time.Second

// Decide runs one admission attempt (docs/FAIRNESS.md, "The rule").
//
// A place is judged at the checkpoints its token names, never at the moment
// a request arrives. The token's nxt is a point of the draw's checkpoint grid
// (see checkpoints), so every version of a token names the same points. An
// attempt looks at the points from its nxt up to now: at the first where the
// serving clock had passed the place's threshold, the place takes the next
// admission from the bucket, in the order places ask (now, or a slot the
// ledger holds for it while the bucket binds). Presenting early, often, late
// or an old version therefore changes nothing but lateness, and a place is
// admitted once whatever is presented.
func (g *Gate) Decide(ctx context.Context, room *Room, a Attempt) Decision {
	now := a.Now
	claims, err := g.codec.ParseWait(a.Token, room.Name(), now)
	if err != nil {
		return Decision{Outcome: OutcomeInvalid, Err: err}
	}
	if !a.Visitor.matches(claims) {
		return Decision{Outcome: OutcomeInvalid, Err: ErrIdentity, Claims: claims}
	}
	if claims.Lane != room.Lane() {
		return Decision{Outcome: OutcomeInvalid, Err: ErrLane, Claims: claims}
	}
	// One hash: cheaper than the signature check before it.
	if err := VerifyWork(claims.Ch, claims.Dif, a.Nonce); err != nil {
		return Decision{Outcome: OutcomeInvalid, Err: err, Claims: claims}
	}
	view := room.View(now)
	if view.State == StateClosed {
		return Decision{Outcome: OutcomeClosed, Claims: claims}
	}
	if now.Before(claims.NextAttempt()) {
		if d, moved := g.regrid(ctx, room, &view, claims, a.Token, now); moved {
			return d
		}
		// Nothing to judge before the checkpoint: the same token back,
		// without signing anything.
		t := WaitToken{Token: a.Token, Claims: claims, Wake: g.wake(&view, claims, now)}
		t.Estimate, t.EstimateKnown = view.EstimateWait(now)
		return Decision{Outcome: OutcomeEarly, Next: t, RetryAfter: t.Wake.Sub(now), Claims: claims}
	}
	return g.judge(ctx, room, &view, claims, a.Token, now)
}

// regrid reschedules a place whose token names a checkpoint of a grid that
// has since moved (the sale start moved earlier, or the room started
// early): without it the place would sleep until the old start while later
// arrivals go in. Its checkpoint becomes the first point of the current
// grid at or after the move plus MaxBackoff — the latest a page that
// follows its answers learns of the move (Wake) — and no earlier than
// MinBackoff after the place's first token. That depends on the room, the
// draw and the place alone, so every version and every moment of asking
// get the same checkpoint: asking early, or often, learns of the move
// sooner and gains nothing by it. If that checkpoint has passed, the
// attempt is judged from it at once. moved is false when nothing moved
// (the early answer stands).
func (g *Gate) regrid(ctx context.Context, room *Room, view *View, claims *WaitClaims, token string, now time.Time) (Decision, bool) {
	if view.Moved.IsZero() || !time.Unix(claims.IssuedAt, 0).Before(view.Moved) {
		return Decision{}, false // minted on the current grid
	}
	grid := g.grid(view, claims.Lot)
	nxt := claims.NextAttempt()
	if grid.at(grid.index(nxt)).Equal(nxt) {
		return Decision{}, false // on the current grid: its checkpoint stands
	}
	from := view.Moved.Add(g.policy.MaxBackoff)
	if first := time.Unix(claims.IssuedAt, 0).Add(g.policy.MinBackoff); first.After(from) {
		from = first
	}
	next := grid.at(grid.index(from))
	if !next.Before(nxt) {
		return Decision{}, false // the old checkpoint comes first: keep it
	}
	// The ledger first: a place it holds (admitted, or holding a slot)
	// gets no new version, so no version outlives its record.
	place, err := g.ledger.Lookup(ctx, claims.Place())
	if err != nil {
		return g.unavailable(fmt.Errorf("looking up place: %w", err), claims), true
	}
	if place.State != PlaceWaiting {
		return Decision{}, false
	}
	claims.Nxt = next.UnixMilli()
	if now.Before(next) {
		return g.wait(view, claims, OutcomeEarly, next, now), true
	}
	return g.judge(ctx, room, view, claims, token, now), true
}

// judge decides an attempt at or after its checkpoint; token is the
// version presented (a used place's record names the one admitted).
func (g *Gate) judge(ctx context.Context, room *Room, view *View, claims *WaitClaims, token string, now time.Time) Decision {
	// The ledger first: a used or reserved place is answered from its
	// record, whatever version of its token is presented.
	place, err := g.ledger.Lookup(ctx, claims.Place())
	if err != nil {
		return g.unavailable(fmt.Errorf("looking up place: %w", err), claims)
	}
	switch place.State {
	case PlaceUsed:
		return g.reused(room, place, token, claims, now)
	case PlaceReserved:
		if now.Before(place.Slot) {
			return g.wait(view, claims, OutcomeBusy, ceilMilli(place.Slot), now)
		}
		if view.State == StatePaused {
			// Nobody is admitted while paused, slot holders neither: the
			// place keeps its slot and asks again at its next checkpoint.
			return g.wait(view, claims, OutcomeBusy, g.recheck(view, claims, now), now)
		}
		return g.useSlot(ctx, room, view, claims, token, place.Slot, place.Slot, now)
	}
	claimed := false
	if view.Order == OrderFIFO && claims.Pos == 0 {
		ranked, c, fresh, d, ok := g.claim(ctx, room, claims, now)
		if !ok {
			return d
		}
		view = &ranked
		if !c.Next.IsZero() {
			// The claim is not judged: it is answered with its first
			// checkpoint, and so is every version from before it,
			// presented again before that checkpoint.
			claims.Nxt = c.Next.UnixMilli()
			claimed = fresh
			if !fresh && now.Before(c.Next) {
				return g.wait(view, claims, OutcomeWait, c.Next, now)
			}
		}
	}
	draw := g.codec.keys.Draw(claims.Lot)
	from, threshold := g.threshold(view, claims, draw.Number)
	if view.Order == OrderFIFO && claims.Pos < 0 {
		room.ObservePreQueuePresent(now, claims.Place(), from, draw.Number)
	} else {
		room.ObservePresent(now, claims.Place(), from+threshold)
	}
	if claimed {
		return g.wait(view, claims, OutcomeWait, claims.NextAttempt(), now)
	}
	var at time.Time
	var eligible bool
	if view.Order == OrderFIFO && view.State != StateOpen {
		if at, eligible = fifoFound(view, claims, from+threshold, now); !eligible {
			at = g.fifoNext(view, claims, now)
		}
	} else {
		at, eligible = g.walk(view, claims, draw.Phase, from, threshold, now)
	}
	if !eligible {
		return g.wait(view, claims, OutcomeWait, at, now)
	}
	if view.State == StatePaused || view.State == StateScheduled {
		// Eligible, but nobody is admitted now: the next checkpoint, not
		// the one already passed, so the token's life moves on with the
		// pause instead of running out under a page that follows it.
		return g.wait(view, claims, OutcomeWait, g.recheck(view, claims, now), now)
	}
	return g.reserve(ctx, room, view, claims, token, at, now)
}

// TokenDigest identifies one version of a waiting token in the ledger's
// record of the place it used (Place.By): a truncated SHA-256 of the
// token as presented.
func TokenDigest(token string) string {
	sum := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// usedBy is the ledger record of token admitted at now: its digest and a
// new pass id.
func (g *Gate) usedBy(token string, now time.Time) (Place, error) {
	id, err := uuid.NewV7FromReader(g.random)
	if err != nil {
		return Place{}, fmt.Errorf("making pass id: %w", err)
	}
	return Place{State: PlaceUsed, By: TokenDigest(token), Pass: id.String(), At: now}, nil
}

// reused answers a place found used: the same pass again while it is
// valid, when the token presented is the version that used it (the answer
// to that attempt was lost: the ledger write timed out after it landed, or
// the node died before it answered) or any token of the same login (its
// other tabs: one place, one pass; not WithoutTabPasses); token_used
// otherwise.
func (g *Gate) reused(room *Room, place Place, token string, claims *WaitClaims, now time.Time) Decision {
	login := !g.noTabPasses && !strings.HasPrefix(claims.Subject, AnonymousPrefix)
	if place.Pass == "" || (place.By != TokenDigest(token) && !login) || !now.Before(place.At.Add(g.policy.PassTTL)) {
		return Decision{Outcome: OutcomeReused, Claims: claims}
	}
	d := g.pass(room, claims, place, now)
	d.Again = true
	return d
}

// claim gives a fifo place its arrival rank at its first judged attempt,
// the first moment it has proved its work: then, and not when the token was
// taken, is its arrival (docs/FAIRNESS.md, "Free tokens take no ranks").
// Every version of the token from before the claim names the rank the
// claim took, on this node, and the claim's first checkpoint (a pre-queue
// place's first after the start; any other's as the counter stands; none
// in an open room, where the claim is judged at once): the gate remembers
// both (claimMemory) as long as such a version can be valid, so presenting
// one again, or racing it, takes no second rank and learns nothing new.
// fresh is true for the attempt that took the rank. ok is false when no
// rank could be taken; d says why.
func (g *Gate) claim(ctx context.Context, room *Room, claims *WaitClaims, now time.Time) (view View, c Claim, fresh bool, d Decision, ok bool) {
	c, fresh, err := room.claimRank(ctx, claims.Place(), now, func(view *View, pos int64, lk float64) float64 {
		return g.fifoKey(view, &WaitClaims{Lot: claims.Lot, Pos: pos, Lk: lk}, g.codec.keys.Lottery(claims.Lot))
	}, func(view *View, c Claim) time.Time {
		ranked := *claims
		ranked.Pos, ranked.Lk = c.Pos, c.Lk
		switch {
		case c.Pos < 0:
			return g.preQueueFirst(view, &ranked, now)
		case view.State != StateOpen:
			return g.fifoNext(view, &ranked, now)
		}
		return time.Time{}
	})
	if err != nil {
		return room.View(now), Claim{}, false, g.unavailable(err, claims), false
	}
	claims.Pos, claims.Lk = c.Pos, c.Lk
	return room.View(now), c, fresh, Decision{}, true
}

// preQueueFirst is a pre-queue place's first checkpoint after the start:
// spread over the first backoff by its draw.
func (g *Gate) preQueueFirst(view *View, claims *WaitClaims, now time.Time) time.Time {
	start := view.SaleStart.Add(durationOf(g.codec.keys.Draw(claims.Lot).Phase * g.policy.MinBackoff.Seconds()))
	return g.pointFrom(view, claims, start, now.Add(g.policy.MinBackoff))
}

// walk judges the place at each checkpoint from its nxt up to now. It
// returns the first checkpoint at which it was eligible, or the first
// checkpoint after now if there was none. Eligibility only grows with time
// (the clock never runs backwards), so the checkpoints between are
// searched, not walked one by one.
func (g *Gate) walk(view *View, claims *WaitClaims, phase, from, threshold float64, now time.Time) (time.Time, bool) {
	first := claims.NextAttempt()
	if view.State == StateOpen {
		return first, true
	}
	eligible := func(at time.Time) bool {
		return !view.Opens.After(at) && view.ClockAt(at)-from >= threshold
	}
	grid := g.gridOf(view, phase)
	// Checkpoints are grid points: index n is at grid.at(n). The
	// checkpoints to judge are lo to hi, the last at or before now.
	lo := grid.index(first)
	loAt := grid.at(lo)
	if now.Before(loAt) {
		return loAt, false
	}
	hi, hiAt, next := lo, loAt, grid.at(lo+1)
	if !next.After(now) { // presented late: the points since count too
		hi = grid.after(now) - 1
		hiAt, next = grid.at(hi), grid.at(hi+1)
	}
	if !eligible(hiAt) {
		return next, false
	}
	if eligible(first) {
		return first, true
	}
	for hi-lo > 1 { // eligible at hi, not at lo
		mid := lo + (hi-lo)/2
		if eligible(grid.at(mid)) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return grid.at(hi), true
}

// fifoFound is when a fifo place became eligible: the first moment since
// its token was first issued (and the queue opened) at which the counter
// had reached its key, read from the room's memory of its clock. It
// depends on the place's key and the counter alone, not on the version
// presented nor on when: asking often, late or with an old version finds
// the same moment, and the place takes the slot it would have had then
// (Gate.reserve). ok is false while the counter has not reached the key.
func fifoFound(view *View, claims *WaitClaims, key float64, now time.Time) (time.Time, bool) {
	if view.ClockAt(now) < key {
		return time.Time{}, false
	}
	lo := later(time.Unix(claims.IssuedAt, 0), view.Opens)
	if !lo.Before(now) {
		return now, true
	}
	if view.ClockAt(lo) >= key {
		return lo, true
	}
	// The clock never runs backwards: search the milliseconds between.
	l, h := lo.UnixMilli(), now.UnixMilli()
	if view.ClockAt(time.UnixMilli(h)) < key {
		return now, true
	}
	for h-l > 1 {
		m := l + (h-l)/2
		if view.ClockAt(time.UnixMilli(m)) >= key {
			h = m
		} else {
			l = m
		}
	}
	return time.UnixMilli(h), true
}

// threshold is where the place's distance on the serving clock counts from,
// and the distance: it is eligible once S − from ≥ threshold.
func (g *Gate) threshold(view *View, claims *WaitClaims, v float64) (from, threshold float64) {
	if view.Order == OrderFIFO {
		return view.RankZero, g.fifoKey(view, claims, v)
	}
	return claims.Srv, Threshold(v)
}

// reserve takes the eligible place's admission from the bucket and records
// it in the ledger: admitted now, or holding the slot the bucket gave. found
// is the checkpoint at which the place was found eligible: a place that
// presented late for it takes the slot it would have had then (it loses its
// lateness, not the slots given meanwhile; Room.ReserveAdmission). Such a
// slot comes before the bucket's own next one, so when it is due the place
// passes the pacer like every slot holder: a crowd presenting late at once
// is spaced at the rate, not admitted beside the bucket.
func (g *Gate) reserve(ctx context.Context, room *Room, view *View, claims *WaitClaims, token string, found, now time.Time) Decision {
	want, err := g.usedBy(token, now)
	if err != nil {
		return g.unavailable(err, claims)
	}
	missed, backdated := room.ReserveAdmission(found, now)
	slot, err := g.charge(ctx, room, later(missed, now), now)
	if err != nil {
		room.RefundAdmission(now)
		return g.unavailable(err, claims)
	}
	if slot.After(now) || backdated {
		want = Place{State: PlaceReserved, Slot: slot}
	}
	due := later(slot, now)
	undo := func() {
		room.RefundAdmission(now)
		refundQuota(room, slot)
	}
	held, fresh, err := g.ledger.Hold(ctx, claims.Place(), want, g.lastValid(view, claims, due))
	if err != nil {
		undo()
		return g.unavailable(fmt.Errorf("recording place: %w", err), claims)
	}
	if !fresh { // a concurrent attempt for the place got there first
		undo()
		if held.State == PlaceUsed {
			return g.reused(room, held, token, claims, now)
		}
		return g.wait(view, claims, OutcomeBusy, ceilMilli(held.Slot), now)
	}
	room.ObserveEligible(now)
	switch {
	case want.State == PlaceUsed:
		return g.pass(room, claims, want, now)
	case slot.After(now):
		return g.wait(view, claims, OutcomeBusy, ceilMilli(slot), now)
	}
	return g.useSlot(ctx, room, view, claims, token, slot, missed, now)
}

// useSlot admits a place whose slot is due: at the rate the room has now
// (the pacer; the slot was given at the rate of its moment, and may now
// lie further ahead; a place presenting late for the slot it would have
// had, missed, may take its turn on credit). The slot took its admission
// of the room's shared budget when it was given (Gate.charge). The ledger
// holds the place reserved at slot until its pass is recorded.
func (g *Gate) useSlot(ctx context.Context, room *Room, view *View, claims *WaitClaims, token string, slot, missed, now time.Time) Decision {
	if due, ok := room.PaceSlot(claims.Place(), missed, now); !ok {
		return g.respaced(view, claims, slot, ceilMilli(due), now)
	}
	used, err := g.usedBy(token, now)
	if err != nil {
		room.UnpaceSlot(claims.Place(), now)
		return g.unavailable(err, claims)
	}
	ok, err := g.ledger.Use(ctx, claims.Place(), used)
	switch {
	case err != nil:
		room.UnpaceSlot(claims.Place(), now)
		return g.unavailable(fmt.Errorf("using reserved place: %w", err), claims)
	case !ok:
		// Another version of the place got there first: the login's
		// other tab, or the answer to this one's lost attempt. The
		// place's one admission of the shared budget went with it.
		room.UnpaceSlot(claims.Place(), now)
		held, err := g.ledger.Lookup(ctx, claims.Place())
		if err != nil {
			return g.unavailable(fmt.Errorf("looking up place: %w", err), claims)
		}
		switch held.State {
		case PlaceUsed:
			return g.reused(room, held, token, claims, now)
		case PlaceReserved:
			return g.wait(view, claims, OutcomeBusy, ceilMilli(later(held.Slot, now)), now)
		}
		// Released since its look-up: a requeue under way (Gate.Requeue
		// holds it again at once). The place is kept; it asks again.
		return g.unavailable(errPlaceReleased, claims)
	}
	return g.pass(room, claims, used, now)
}

// errPlaceReleased is why a version whose place was released while it used
// it is asked to come back: its place is kept.
var errPlaceReleased = errors.New("place released while it was being used")

// charge takes the admission of a slot at or after at from the room's
// shared budget, if it has one: the slot it returns is at, or the start of
// the first later budget window with an admission left.
func (g *Gate) charge(ctx context.Context, room *Room, at, now time.Time) (time.Time, error) {
	q := room.sharedQuota()
	if q == nil {
		return at, nil
	}
	slot, err := q.Reserve(ctx, at, now)
	if err != nil {
		return time.Time{}, fmt.Errorf("taking admission budget: %w", err)
	}
	return slot, nil
}

func refundQuota(room *Room, slot time.Time) {
	if q := room.sharedQuota(); q != nil {
		q.Refund(slot)
	}
}

// pass signs the pass of the place's admission as the ledger recorded it
// (used.Pass, used.At): the same claims, so the same pass, every time.
func (g *Gate) pass(room *Room, claims *WaitClaims, used Place, now time.Time) Decision {
	room.ObserveAdmitted(claims.Place(), now)
	pc := &PassClaims{
		Registered: Registered{
			ID:        used.Pass,
			Subject:   claims.Subject,
			Audience:  claims.Audience,
			IssuedAt:  used.At.Unix(),
			ExpiresAt: used.At.Add(g.policy.PassTTL).Unix(),
		},
		Wid: claims.ID,
		Bnd: claims.Bnd,
	}
	pass, err := g.SignPass(pc)
	if err != nil {
		return g.unavailable(err, claims)
	}
	return Decision{Outcome: OutcomeAdmit, Pass: pass, PassClaims: pc, Claims: claims}
}

func (g *Gate) unavailable(err error, claims *WaitClaims) Decision {
	return Decision{Outcome: OutcomeUnavailable, Err: err, RetryAfter: unavailableRetry, Claims: claims}
}

// Requeue sends an admitted visitor back to waiting when the admission could
// not complete (the admission hook said the seat service is full, or is
// down). The place keeps its admission, as a slot at its next checkpoint:
// the ledger holds it reserved until then, so no version of its token is
// judged again (nor the hook called again) before that checkpoint, and at
// it the place is admitted from its slot without taking another admission
// from the bucket. A place refused over and over so holds one admission,
// not one per attempt; the room's shared budget gets its admission back
// and the slot takes one of its own window.
func (g *Gate) Requeue(ctx context.Context, room *Room, claims *WaitClaims, now time.Time) Decision {
	view := room.View(now)
	next := g.recheck(&view, claims, now)
	// Used becomes reserved: two steps, as the ledger has no swap. Between
	// them a concurrent attempt of the place may be judged afresh; the
	// ledger's Hold still lets only one of them through.
	if err := g.ledger.Release(ctx, claims.Place()); err != nil {
		return g.unavailable(fmt.Errorf("releasing place: %w", err), claims)
	}
	refundQuota(room, now)
	next, err := g.charge(ctx, room, next, now)
	if err != nil {
		// Released, not held: the bucket gets the admission back, and the
		// place is judged again at its next attempt.
		room.RefundAdmission(now)
		return g.unavailable(err, claims)
	}
	held, fresh, err := g.ledger.Hold(ctx, claims.Place(), Place{State: PlaceReserved, Slot: next}, g.lastValid(&view, claims, next))
	if err != nil || !fresh {
		room.RefundAdmission(now)
		refundQuota(room, next)
	}
	switch {
	case err != nil:
		return g.unavailable(fmt.Errorf("holding refused place: %w", err), claims)
	case !fresh && held.State == PlaceUsed:
		return Decision{Outcome: OutcomeReused, Claims: claims} // a concurrent attempt took the place in
	case !fresh:
		next = ceilMilli(held.Slot)
	}
	return g.wait(&view, claims, OutcomeWait, next, now)
}

// SignPass signs a pass, giving it a fresh id unless it has one. The
// gateway calls it again to add the session id the admission hook
// returned (the id stays).
func (g *Gate) SignPass(pc *PassClaims) (string, error) {
	if pc.ID == "" {
		id, err := uuid.NewV7FromReader(g.random)
		if err != nil {
			return "", fmt.Errorf("making pass id: %w", err)
		}
		pc.ID = id.String()
	}
	return g.codec.Sign(pc)
}

// VerifyPass verifies a pass for room at now.
func (g *Gate) VerifyPass(room, token string, now time.Time) (*PassClaims, error) {
	return g.codec.ParsePass(token, room, now)
}

func (g *Gate) wait(view *View, claims *WaitClaims, outcome Outcome, next, now time.Time) Decision {
	g.schedule(claims, next)
	t, err := g.ticket(view, claims, now)
	if err != nil {
		return g.unavailable(err, claims)
	}
	return Decision{Outcome: outcome, Next: t, RetryAfter: t.Wake.Sub(now), Claims: claims}
}

// respaced is the busy answer of a place whose slot, held in the ledger at
// slot, the rate now puts at next. The ledger keeps the place until
// lastValid of that slot:
// no version may outlive that, so the new version expires by then even if
// its slot lies beyond (a cut that re-spaces a slot by more than TokenTTL
// loses the place rather than let it pass twice).
func (g *Gate) respaced(view *View, claims *WaitClaims, slot, next, now time.Time) Decision {
	g.schedule(claims, next)
	limit := slot.Add(g.policy.MinBackoff + g.policy.MaxBackoff + g.policy.TokenTTL)
	claims.ExpiresAt = min(claims.ExpiresAt, limit.Unix())
	t, err := g.ticket(view, claims, now)
	if err != nil {
		return g.unavailable(err, claims)
	}
	return Decision{Outcome: OutcomeBusy, Next: t, RetryAfter: next.Sub(now), Claims: claims}
}

// checkpoints is one draw's grid of checkpoints in a room. Point n lies at
// Opens + F(n + phase): F grows geometrically from MinBackoff apart, by
// BackoffShare of the time since Opens, until points are MaxBackoff apart,
// then linearly. The phase is a keyed hash of the lottery ticket, so the
// grid depends on the draw and the room alone: every version of a token,
// and every token of one identity (which share a draw), name the same
// checkpoints, whenever they are judged; and draws spread evenly over time.
type checkpoints struct {
	gridShape
	origin time.Time
	phase  float64
}

// gridShape is what a grid's points are fixed by besides the draw and the
// room, worked out once by NewGate: a judged poll computes about six points.
type gridShape struct {
	min, max, mul float64 // seconds; mul is 1 + BackoffShare
	logMul        float64 // ln(mul)
	knee          float64 // the index where spacing reaches max
	kneeOffset    float64 // F(knee)
}

func newGridShape(minBackoff, maxBackoff time.Duration, share float64) gridShape {
	s := gridShape{min: minBackoff.Seconds(), max: maxBackoff.Seconds(), mul: 1 + share}
	s.logMul = math.Log(s.mul)
	s.knee = math.Log(s.max/s.min) / s.logMul
	s.kneeOffset = s.geometric(s.knee)
	return s
}

// geometric is F(x) before the knee: min·(mul^x − 1)/(mul − 1), with
// mul^x − 1 as expm1(x·ln mul), which costs a fifth of math.Pow.
func (s gridShape) geometric(x float64) float64 {
	return s.min * math.Expm1(x*s.logMul) / (s.mul - 1)
}

func (g *Gate) grid(view *View, lot string) checkpoints {
	return g.gridOf(view, g.codec.keys.Draw(lot).Phase)
}

// gridOf is the grid of a draw whose phase is known.
func (g *Gate) gridOf(view *View, phase float64) checkpoints {
	shape := g.lotteryGrid
	if view.Order == OrderFIFO {
		shape = g.fifoGrid
	}
	return checkpoints{gridShape: shape, origin: view.Opens, phase: phase}
}

// offset is F(x) in seconds.
func (c checkpoints) offset(x float64) float64 {
	if x <= c.knee {
		return c.geometric(x)
	}
	return c.kneeOffset + c.max*(x-c.knee)
}

// inverse is F⁻¹(seconds).
func (c checkpoints) inverse(sec float64) float64 {
	if sec > c.kneeOffset {
		return c.knee + (sec-c.kneeOffset)/c.max
	}
	return math.Log1p(sec*(c.mul-1)/c.min) / c.logMul
}

// at is point n, in whole milliseconds as nxt carries it.
func (c checkpoints) at(n int64) time.Time {
	sec := c.offset(float64(n) + c.phase)
	return time.UnixMilli(c.origin.Add(durationOf(sec)).UnixMilli())
}

// after is the index of the first point strictly after t.
func (c checkpoints) after(t time.Time) int64 {
	if t.Before(c.origin) {
		return 0
	}
	n := max(0, int64(math.Floor(c.inverse(t.Sub(c.origin).Seconds())-c.phase))+1)
	for n > 0 && c.at(n-1).After(t) { // rounding to milliseconds
		n--
	}
	for !c.at(n).After(t) {
		n++
	}
	return n
}

// index is the index of point t, or of the first point after it if t is
// not one (a token from before the grid moved).
func (c checkpoints) index(t time.Time) int64 {
	return c.after(t.Add(-time.Millisecond))
}

// ceilMilli rounds a slot's due time up to nxt's millisecond, so a token
// presented at its nxt is never before its slot.
func ceilMilli(t time.Time) time.Time {
	c := time.UnixMilli(t.UnixMilli())
	if c.Before(t) {
		c = c.Add(time.Millisecond)
	}
	return c
}

// recheck is when a place that is eligible but cannot be admitted now (the
// room is paused, or the hook refused it) asks again: its next checkpoint;
// in a fifo room, whose grid is fine, the first point a backoff ahead (the
// longest while paused).
func (g *Gate) recheck(view *View, claims *WaitClaims, now time.Time) time.Time {
	if view.Order != OrderFIFO {
		return g.nextCheckpoint(view, claims, now)
	}
	wait := g.policy.MinBackoff
	if view.State == StatePaused {
		wait = g.policy.MaxBackoff
	}
	return g.pointFrom(view, claims, now.Add(wait), now)
}

// nextCheckpoint is the first checkpoint after at on the draw's grid.
func (g *Gate) nextCheckpoint(view *View, claims *WaitClaims, at time.Time) time.Time {
	grid := g.grid(view, claims.Lot)
	return grid.at(grid.after(at))
}

// schedule sets nxt and extends exp past it, never beyond the place's life.
func (g *Gate) schedule(claims *WaitClaims, next time.Time) {
	claims.Nxt = next.UnixMilli()
	exp := next.Add(g.policy.TokenTTL)
	if end := time.Unix(claims.IssuedAt, 0).Add(g.policy.PlaceTTL); exp.After(end) {
		exp = end
	}
	claims.ExpiresAt = exp.Unix()
}

// lastValid is when no version of an admitted (or slotted) place's token
// can be valid any more, so the ledger must remember the place until then.
// Once the ledger holds a place, no version with a later nxt is minted: the
// versions that exist were minted by now, and each names a checkpoint at
// most one backoff after its minting (or just after a sale start, or the
// slot due), and expires TokenTTL after it. So the ledger keeps a place
// minutes, not the place's whole life; never beyond that life either.
func (g *Gate) lastValid(view *View, claims *WaitClaims, due time.Time) time.Time {
	last := due.Add(g.policy.MinBackoff + g.policy.MaxBackoff)
	if start := view.LatestStart.Add(g.policy.MinBackoff); start.After(last) {
		last = start
	}
	last = last.Add(g.policy.TokenTTL + g.policy.Leeway + time.Second)
	if end := time.Unix(claims.IssuedAt, 0).Add(g.policy.PlaceTTL + g.policy.Leeway + time.Second); end.Before(last) {
		return end
	}
	return last
}

func (g *Gate) ticket(view *View, claims *WaitClaims, now time.Time) (WaitToken, error) {
	token, err := g.codec.Sign(claims)
	if err != nil {
		return WaitToken{}, err
	}
	t := WaitToken{Token: token, Claims: claims, Wake: g.wake(view, claims, now)}
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
