package admission

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/google/uuid"
)

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
	Claims *tokens.WaitClaims
	// Next is the waiting token to hold next, for wait, busy and early.
	Next WaitToken
	// Pass and PassClaims are set for OutcomeAdmit.
	Pass       string
	PassClaims *tokens.PassClaims
	// Again is set when the admission was made by an earlier attempt with
	// the same token whose answer was lost: Pass is the pass it was given.
	Again bool
	// Slot is, for OutcomeAdmit unless Again, the slot whose admission
	// the pass took: a Requeue gives back that one.
	Slot time.Time
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
	if claims.Lane != room.lane() {
		return Decision{Outcome: OutcomeInvalid, Err: ErrLane, Claims: claims}
	}
	// One hash: cheaper than the signature check before it.
	if err := tokens.VerifyWork(claims.Ch, claims.Dif, a.Nonce); err != nil {
		return Decision{Outcome: OutcomeInvalid, Err: err, Claims: claims}
	}
	view := room.View(now)
	if view.State == StateClosed {
		return Decision{Outcome: OutcomeClosed, Claims: claims}
	}
	g.lapseSlots(ctx, room, &view, now)
	if now.Before(claims.NextAttempt()) {
		if d, moved := g.regrid(ctx, room, &view, claims, a.Token, now); moved {
			return room.noteDue(claims.Place(), d)
		}
		// Nothing to judge before the checkpoint: the same token back,
		// without signing anything.
		t := WaitToken{Token: a.Token, Claims: claims, Wake: g.wake(&view, claims, now)}
		t.Estimate, t.EstimateKnown = view.EstimateWait(now)
		return Decision{Outcome: OutcomeEarly, Next: t, RetryAfter: t.Wake.Sub(now), Claims: claims}
	}
	return room.noteDue(claims.Place(), g.judge(ctx, room, &view, claims, a.Token, now))
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
func (g *Gate) regrid(ctx context.Context, room *Room, view *View, claims *tokens.WaitClaims, token string, now time.Time) (Decision, bool) {
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
	if place.State != queue.PlaceWaiting {
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
func (g *Gate) judge(ctx context.Context, room *Room, view *View, claims *tokens.WaitClaims, token string, now time.Time) Decision {
	end, err := g.turns.take(ctx, claims.Place())
	if err != nil {
		return g.unavailable(err, claims)
	}
	defer end()
	// The ledger first: a used or reserved place is answered from its
	// record, whatever version of its token is presented.
	place, err := g.ledger.Lookup(ctx, claims.Place())
	if err != nil {
		return g.unavailable(fmt.Errorf("looking up place: %w", err), claims)
	}
	if place.State != queue.PlaceWaiting {
		room.observeFound(claims.Place())
	}
	switch place.State {
	case queue.PlaceUsed:
		return g.reused(room, place, token, claims, now)
	case queue.PlaceReserved:
		held := room.heldSlot(place)
		if now.Before(place.Slot) {
			room.slots.watch(claims.Place(), held, ceilMilli(place.Slot))
			return g.wait(view, claims, OutcomeBusy, ceilMilli(place.Slot), now)
		}
		if view.State == StatePaused {
			// Nobody is admitted while paused, slot holders neither: the
			// place keeps its slot and asks again at its next checkpoint.
			next := g.recheck(view, claims, now)
			room.slots.watch(claims.Place(), held, next)
			return g.wait(view, claims, OutcomeBusy, next, now)
		}
		return g.useSlot(ctx, room, view, claims, token, held, place.Slot, now)
	case queue.PlaceLapsed:
		// It held a slot and came back after it lapsed: eligible then,
		// it takes a new admission at that slot, on credit (lapse.go).
		if view.State == StatePaused || view.State == StateScheduled {
			return g.wait(view, claims, OutcomeWait, g.recheck(view, claims, now), now)
		}
		return g.reserve(ctx, room, view, claims, token, place.Slot, place.Slot, now)
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
	draw := g.codec.Keys().Draw(claims.Lot)
	from, threshold := g.threshold(view, claims, draw.Number)
	if view.Order == OrderFIFO && claims.Pos < 0 {
		room.observePreQueuePresent(now, claims.Place(), from, draw.Number)
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
	return g.reserve(ctx, room, view, claims, token, at, time.Time{}, now)
}

// tokenDigest identifies one version of a waiting token in the ledger's
// record of the place it used (Place.By): a truncated SHA-256 of the
// token as presented.
func tokenDigest(token string) string {
	sum := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// usedBy is the ledger record of token admitted at now: its digest and a
// new pass id.
func (g *Gate) usedBy(token string, now time.Time) (queue.Place, error) {
	id, err := uuid.NewV7FromReader(g.random)
	if err != nil {
		return queue.Place{}, fmt.Errorf("making pass id: %w", err)
	}
	return queue.Place{State: queue.PlaceUsed, By: tokenDigest(token), Pass: id.String(), At: now}, nil
}

// reused answers a place found used: the same pass again while it is
// valid, when the token presented is the version that used it (the answer
// to that attempt was lost: the ledger write timed out after it landed, or
// the node died before it answered) or any token of the same login (its
// other tabs: one place, one pass; not WithoutTabPasses); token_used
// otherwise.
func (g *Gate) reused(room *Room, place queue.Place, token string, claims *tokens.WaitClaims, now time.Time) Decision {
	login := !g.noTabPasses && !strings.HasPrefix(claims.Subject, AnonymousPrefix)
	if place.Pass == "" || (place.By != tokenDigest(token) && !login) || !now.Before(place.At.Add(g.policy.PassTTL)) {
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
func (g *Gate) claim(ctx context.Context, room *Room, claims *tokens.WaitClaims, now time.Time) (view View, c claim, fresh bool, d Decision, ok bool) {
	c, fresh, err := room.claimRank(ctx, claims.Place(), now, func(view *View, pos int64, lk float64) float64 {
		return g.fifoKey(view, &tokens.WaitClaims{Lot: claims.Lot, Pos: pos, Lk: lk}, g.codec.Keys().Lottery(claims.Lot))
	}, func(view *View, c claim) time.Time {
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
		return room.View(now), claim{}, false, g.unavailable(err, claims), false
	}
	claims.Pos, claims.Lk = c.Pos, c.Lk
	return room.View(now), c, fresh, Decision{}, true
}

// pass signs the pass of the place's admission as the ledger recorded it
// (used.Pass, used.At): the same claims, so the same pass, every time.
func (g *Gate) pass(room *Room, claims *tokens.WaitClaims, used queue.Place, now time.Time) Decision {
	room.observeAdmitted(claims.Place(), now)
	pc := &tokens.PassClaims{
		Registered: tokens.Registered{
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

func (g *Gate) unavailable(err error, claims *tokens.WaitClaims) Decision {
	return Decision{Outcome: OutcomeUnavailable, Err: err, RetryAfter: unavailableRetry, Claims: claims}
}

func (g *Gate) wait(view *View, claims *tokens.WaitClaims, outcome Outcome, next, now time.Time) Decision {
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
func (g *Gate) respaced(view *View, claims *tokens.WaitClaims, slot, next, now time.Time) Decision {
	g.schedule(claims, next)
	limit := slot.Add(g.policy.MinBackoff + g.policy.MaxBackoff + g.policy.TokenTTL)
	claims.ExpiresAt = min(claims.ExpiresAt, limit.Unix())
	t, err := g.ticket(view, claims, now)
	if err != nil {
		return g.unavailable(err, claims)
	}
	return Decision{Outcome: OutcomeBusy, Next: t, RetryAfter: next.Sub(now), Claims: claims}
}
