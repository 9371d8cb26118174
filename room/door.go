package room

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/admission/tokens"
)

// Door is how a front door reaches the room's decisions: the gate that
// signs and judges tokens with the front door's keys and policy, over the
// room's lanes and ledger. A front door names a lane ("" for the default
// one); the door finds the lane's room, so the request path crosses the
// front door, the room and the gate once each.
type Door struct {
	shared *Shared
	gate   *admission.Gate
}

// Door opens a door on the room with the keys and policy of s: the
// configured keys, or keys the room generated and keeps for its lifetime
// (generated reports them).
func (sh *Shared) Door(s Settings, opts ...admission.GateOption) (d *Door, generated bool, err error) {
	ring, generated, err := sh.keys(s.Keys)
	if err != nil {
		return nil, false, fmt.Errorf("loading keys: %w", err)
	}
	return &Door{shared: sh, gate: admission.NewGate(ring, s.policy(), sh.Ledger, slices.Concat(opts, []admission.GateOption{admission.WithTurns(sh.turns)})...)}, generated, nil
}

// View is the named lane's room as it stands at now.
func (d *Door) View(lane string, now time.Time) admission.View {
	return d.shared.LaneRoom(lane).View(now)
}

// Issue places a new visitor in the named lane.
func (d *Door) Issue(ctx context.Context, lane string, who admission.Visitor, now time.Time) (admission.WaitToken, error) {
	return d.gate.IssueContext(ctx, d.shared.LaneRoom(lane), who, now)
}

// Resume returns a visitor's valid waiting token for the named lane.
func (d *Door) Resume(lane, token string, who admission.Visitor, now time.Time) (admission.WaitToken, error) {
	return d.gate.Resume(d.shared.LaneRoom(lane), token, who, now)
}

// Decide judges an admission attempt in the named lane.
func (d *Door) Decide(ctx context.Context, lane string, a admission.Attempt) admission.Decision {
	return d.gate.Decide(ctx, d.shared.LaneRoom(lane), a)
}

// Requeue sends an admission the hook turned away (admitted, the decision
// that made it) back to waiting in the named lane.
func (d *Door) Requeue(ctx context.Context, lane string, admitted admission.Decision, now time.Time) admission.Decision {
	return d.gate.Requeue(ctx, d.shared.LaneRoom(lane), admitted, now)
}

// SignPass signs a pass's claims.
func (d *Door) SignPass(pc *tokens.PassClaims) (string, error) { return d.gate.SignPass(pc) }

// VerifyPass checks a pass of this room.
func (d *Door) VerifyPass(token string, now time.Time) (*tokens.PassClaims, error) {
	return d.gate.VerifyPass(d.shared.Room.Name(), token, now)
}

// Bind is the keyed hash of a client address that binds tokens to it.
func (d *Door) Bind(addr string) string { return d.gate.Codec().Keys().Bind(addr) }

// Codec signs and parses the room's tokens.
func (d *Door) Codec() *tokens.Codec { return d.gate.Codec() }
