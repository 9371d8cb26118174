package admission

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/google/uuid"
)

// ErrIdentity means the token belongs to another visitor.
var ErrIdentity = errors.New("token belongs to another visitor")

// ErrLane means the token waits in another lane than the room judging it:
// the visitor's login no longer (or never did) grant that lane.
var ErrLane = errors.New("token belongs to another lane")

// Gate issues waiting tokens and decides admission attempts. It holds no
// per-visitor state: everything about a waiting place is in its token, except
// the ledger of places admitted or holding an admission slot (and, while
// one is judged, that it is).
type Gate struct {
	codec  *tokens.Codec
	policy Policy
	ledger queue.Ledger
	random io.Reader
	// lotteryGrid and fifoGrid are the checkpoint grids' shapes in each
	// order, fixed by the policy.
	lotteryGrid, fifoGrid gridShape
	// noTabPasses: see WithoutTabPasses.
	noTabPasses bool
	// turns judges a place's attempts at this node one at a time.
	turns *Turns
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

// WithTurns makes the gate take a place's turns from t, shared with the
// other gates judging the room's places at this node (Turns).
func WithTurns(t *Turns) GateOption {
	return func(g *Gate) { g.turns = t }
}

// NewGate returns a gate signing with keys and remembering used tokens in ledger.
func NewGate(keys *tokens.KeyRing, policy Policy, ledger queue.Ledger, opts ...GateOption) *Gate {
	policy = policy.withDefaults()
	g := &Gate{
		codec:  tokens.NewCodec(keys, policy.Leeway),
		policy: policy,
		ledger: ledger,
		random: rand.Reader,
		turns:  NewTurns(),
	}
	g.lotteryGrid = newGridShape(policy.MinBackoff, policy.MaxBackoff, policy.BackoffShare).withPointBeforeOrigin()
	// Evenly spaced and fine: the gate names a few of a fifo draw's points
	// (Gate.fifoNext), judging walks them all.
	g.fifoGrid = newGridShape(fifoGrain, fifoGrain, policy.BackoffShare)
	for _, opt := range opts {
		opt(g)
	}
	return g
}

// Codec is the gate's token codec.
func (g *Gate) Codec() *tokens.Codec { return g.codec }

// WaitToken is a waiting token and what the waiting page needs of it.
type WaitToken struct {
	// Token is a compact JWS the gate signed, or verified as one it
	// signed: base64url parts joined by dots, so only letters, digits and
	// -_. (FuzzParseWait holds every token ParseWait accepts to that).
	Token  string
	Claims *tokens.WaitClaims
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
func (v Visitor) matches(c *tokens.WaitClaims) bool {
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
	view := room.View(now)
	texts, err := g.drawTexts(who.Subject == "")
	if err != nil {
		return WaitToken{}, err
	}
	subject, lot := who.Subject, texts.lot
	if subject == "" {
		subject = texts.subject
	} else {
		// A verified subject draws once per room, however many tokens they
		// take; an anonymous visitor draws at random.
		lot = g.codec.Keys().IdentityLot(view.Name, who.Subject)
	}
	claims := &tokens.WaitClaims{
		Registered: tokens.Registered{
			ID:       texts.id,
			Subject:  subject,
			Audience: view.Name,
			IssuedAt: now.Unix(),
		},
		Lot:  lot,
		Srv:  view.Clock.At(now),
		Ch:   texts.ch,
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
func (g *Gate) wake(view *View, claims *tokens.WaitClaims, now time.Time) time.Time {
	next := claims.NextAttempt()
	if view.State == StateScheduled && next.Sub(now) > g.policy.MaxBackoff {
		return now.Add(g.policy.MaxBackoff)
	}
	return next
}

// SignPass signs a pass, giving it a fresh id unless it has one. The
// gateway calls it again to add the session id the admission hook
// returned (the id stays).
func (g *Gate) SignPass(pc *tokens.PassClaims) (string, error) {
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
func (g *Gate) VerifyPass(room, token string, now time.Time) (*tokens.PassClaims, error) {
	return g.codec.ParsePass(token, room, now)
}

func (g *Gate) ticket(view *View, claims *tokens.WaitClaims, now time.Time) (WaitToken, error) {
	token, err := g.codec.Sign(claims)
	if err != nil {
		return WaitToken{}, err
	}
	t := WaitToken{Token: token, Claims: claims, Wake: g.wake(view, claims, now)}
	t.Estimate, t.EstimateKnown = view.EstimateWait(now)
	return t, nil
}

// drawnBytes is how many random bytes an anonymous subject and a lottery
// draw each take.
const drawnBytes = 16

// issueTexts are a new token's random texts.
type issueTexts struct {
	id, ch string
	// subject and lot are drawn for an anonymous visitor only.
	subject, lot string
}

// drawTexts draws a new token's id and challenge and, for an anonymous
// visitor, its subject and lottery draw: the id from google/uuid, then
// the subject's, the draw's and the challenge's bytes, in that order,
// from one read. The texts share one string, as they share the claims
// that hold them: four reads of the random source and ten allocations
// were a sixth of a new token's cost.
func (g *Gate) drawTexts(anonymous bool) (issueTexts, error) {
	id, err := uuid.NewV7FromReader(g.random)
	if err != nil {
		return issueTexts{}, fmt.Errorf("making token id: %w", err)
	}
	var raw [2*drawnBytes + tokens.ChallengeBytes]byte
	drawn := raw[2*drawnBytes:]
	if anonymous {
		drawn = raw[:]
	}
	if _, err := io.ReadFull(g.random, drawn); err != nil {
		return issueTexts{}, fmt.Errorf("reading random bytes: %w", err)
	}
	// Room for the 109 bytes of an anonymous visitor's texts.
	var buf [128]byte
	b := appendUUID(buf[:0], id)
	idEnd := len(b)
	var subjectEnd, lotEnd int
	if anonymous {
		b = base64.RawURLEncoding.AppendEncode(append(b, AnonymousPrefix...), raw[:drawnBytes])
		subjectEnd = len(b)
		b = base64.StdEncoding.AppendEncode(b, raw[drawnBytes:2*drawnBytes])
		lotEnd = len(b)
	}
	b = base64.RawURLEncoding.AppendEncode(b, raw[2*drawnBytes:])
	s := string(b)
	t := issueTexts{id: s[:idEnd], ch: s[max(idEnd, lotEnd):]}
	if anonymous {
		t.subject, t.lot = s[idEnd:subjectEnd], s[subjectEnd:lotEnd]
	}
	return t, nil
}

// appendUUID appends id's canonical text, as id.String() writes it.
func appendUUID(b []byte, id uuid.UUID) []byte {
	b = append(hex.AppendEncode(b, id[:4]), '-')
	b = append(hex.AppendEncode(b, id[4:6]), '-')
	b = append(hex.AppendEncode(b, id[6:8]), '-')
	b = append(hex.AppendEncode(b, id[8:10]), '-')
	return hex.AppendEncode(b, id[10:])
}
