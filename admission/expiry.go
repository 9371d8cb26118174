package admission

import (
	"time"

	"github.com/fairgate/fairgate/admission/tokens"
)

// schedule sets nxt and extends exp past it, never beyond the place's life.
func (g *Gate) schedule(claims *tokens.WaitClaims, next time.Time) {
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
func (g *Gate) lastValid(view *View, claims *tokens.WaitClaims, due time.Time) time.Time {
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
