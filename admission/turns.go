package admission

import (
	"context"
	"fmt"
	"sync"
)

// Turns lets one attempt of a place at a time be judged at this node. A
// login's tabs presenting together at its checkpoint would each take an
// admission of the room's budget before the ledger let one hold the
// place, and the rest would give theirs back; in turn, the tabs after the
// first find the place held and take nothing. Every gate judging a room's
// places at a node shares one (WithTurns): the room's front doors, and the
// gates a reload makes while the old ones finish. A reload that builds the
// room's state anew starts new turns, and its gates race the old ones as
// another node's would.
type Turns struct {
	mu   sync.Mutex
	busy map[string]chan struct{} // closed when the place's turn ends
}

// NewTurns returns turns with no place judged.
func NewTurns() *Turns { return &Turns{busy: make(map[string]chan struct{})} }

// take waits for place's turn, until ctx ends, and returns how to end it.
func (t *Turns) take(ctx context.Context, place string) (end func(), err error) {
	for {
		t.mu.Lock()
		other, ok := t.busy[place]
		if !ok {
			done := make(chan struct{})
			t.busy[place] = done
			t.mu.Unlock()
			return func() {
				t.mu.Lock()
				delete(t.busy, place)
				t.mu.Unlock()
				close(done)
			}, nil
		}
		t.mu.Unlock()
		select {
		case <-other:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for another attempt of the place: %w", context.Cause(ctx))
		}
	}
}
