package gateway

import (
	"context"
	"time"

	"github.com/fairgate/fairgate/admission/roomstate"
	"github.com/fairgate/fairgate/room"
)

// NewShared creates a room's shared state in memory from its config
// with the gateway's metrics as its observer; clock is the time its clock
// starts at and its used-token memory expires by.
func NewShared(cfg Config, clock func() time.Time) (*room.Shared, error) {
	return NewSharedOn(context.Background(), cfg, room.StateStore{}, nil, clock)
}

// NewSharedOn creates a room's shared state on an opened state store (nil
// for memory; see room.NewSharedOn) with the gateway's metrics as its
// observer. The whole config is checked, the gateway's part too.
func NewSharedOn(ctx context.Context, cfg Config, st room.StateStore, store roomstate.Store, clock func() time.Time) (*room.Shared, error) {
	if _, err := cfg.settle(); err != nil {
		return nil, err
	}
	sh, err := room.NewSharedOn(ctx, cfg.Config, st, store, clock)
	if err != nil {
		return nil, err
	}
	roomMetrics(sh, clock)
	return sh, nil
}
