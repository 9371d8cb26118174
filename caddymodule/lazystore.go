package caddymodule

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/roomstate"
	"github.com/fairgate/fairgate/room"
	roomstores "github.com/fairgate/fairgate/room/stores"
)

// lazyStore is a state store opened on its first call, not when a config
// is provisioned: `caddy validate`, or a config Caddy then rejects, must
// not take (or wait call_timeout for) the bolt file a running Caddy holds.
// The first call comes when the config runs (the room joins its store).
type lazyStore struct {
	settings room.StateStore

	mu     sync.Mutex
	store  roomstate.Store
	failed time.Time // when the last open failed: asked again a second later
	err    error
	closed bool
}

// openRetry is how long a failed open is answered from memory.
const openRetry = time.Second

func (l *lazyStore) get(ctx context.Context) (roomstate.Store, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.store != nil:
		return l.store, nil
	case l.closed:
		return nil, fmt.Errorf("state store closed: %w", roomstate.ErrUnavailable)
	case l.err != nil && time.Since(l.failed) < openRetry:
		return nil, l.err
	}
	st, err := l.open(ctx)
	if err != nil {
		l.failed, l.err = time.Now(), fmt.Errorf("opening the state store: %w (%w)", err, roomstate.ErrUnavailable)
		return nil, l.err
	}
	l.store, l.err = st, nil
	return st, nil
}

func (l *lazyStore) open(ctx context.Context) (roomstate.Store, error) {
	if l.settings.Type == room.StoreBolt {
		if err := os.MkdirAll(filepath.Dir(l.settings.Path), 0o700); err != nil {
			return nil, fmt.Errorf("state_store: %w", err)
		}
	}
	return roomstores.Open(ctx, l.settings)
}

// Close closes the store if it was opened; later calls fail.
func (l *lazyStore) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.store == nil {
		return nil
	}
	return l.store.Close()
}

// Sweep deletes expired items of a store that needs it (bolt).
func (l *lazyStore) Sweep(ctx context.Context, now time.Time) (int, error) {
	st, err := l.get(ctx)
	if err != nil {
		return 0, err
	}
	if sw, ok := st.(interface {
		Sweep(context.Context, time.Time) (int, error)
	}); ok {
		return sw.Sweep(ctx, now)
	}
	return 0, nil
}

func (l *lazyStore) LoadControl(ctx context.Context, room string) (roomstate.Control, uint64, error) {
	st, err := l.get(ctx)
	if err != nil {
		return roomstate.Control{}, 0, err
	}
	return st.LoadControl(ctx, room)
}

func (l *lazyStore) SaveControl(ctx context.Context, room string, c roomstate.Control, prev uint64) (uint64, error) {
	st, err := l.get(ctx)
	if err != nil {
		return 0, err
	}
	return st.SaveControl(ctx, room, c, prev)
}

func (l *lazyStore) ReserveBudget(ctx context.Context, room string, w roomstate.Window, n int64) (roomstate.Grant, error) {
	st, err := l.get(ctx)
	if err != nil {
		return roomstate.Grant{}, err
	}
	return st.ReserveBudget(ctx, room, w, n)
}

func (l *lazyStore) ReturnBudget(ctx context.Context, room string, w roomstate.Window, n, top int64) error {
	st, err := l.get(ctx)
	if err != nil {
		return err
	}
	return st.ReturnBudget(ctx, room, w, n, top)
}

func (l *lazyStore) ReturnLapsed(ctx context.Context, room string, w roomstate.Window, n int64) (int64, error) {
	st, err := l.get(ctx)
	if err != nil {
		return 0, err
	}
	return st.ReturnLapsed(ctx, room, w, n)
}

func (l *lazyStore) HoldPlace(ctx context.Context, room, id string, p queue.Place, until, now time.Time) (queue.Place, bool, error) {
	st, err := l.get(ctx)
	if err != nil {
		return queue.Place{}, false, err
	}
	return st.HoldPlace(ctx, room, id, p, until, now)
}

func (l *lazyStore) UsePlace(ctx context.Context, room, id string, p queue.Place, now time.Time) (bool, error) {
	st, err := l.get(ctx)
	if err != nil {
		return false, err
	}
	return st.UsePlace(ctx, room, id, p, now)
}

func (l *lazyStore) LookupPlace(ctx context.Context, room, id string, now time.Time) (queue.Place, error) {
	st, err := l.get(ctx)
	if err != nil {
		return queue.Place{}, err
	}
	return st.LookupPlace(ctx, room, id, now)
}

// MayHoldPlace implements roomstate.PlaceIndex: true (ask the store)
// until the store is open.
func (l *lazyStore) MayHoldPlace(room, id string) bool {
	l.mu.Lock()
	st := l.store
	l.mu.Unlock()
	return st == nil || roomstate.MayHoldPlace(st, room, id)
}

func (l *lazyStore) LapsePlace(ctx context.Context, room, id string, slot, now time.Time) (bool, error) {
	st, err := l.get(ctx)
	if err != nil {
		return false, err
	}
	return st.LapsePlace(ctx, room, id, slot, now)
}

func (l *lazyStore) ReleasePlace(ctx context.Context, room, id string) error {
	st, err := l.get(ctx)
	if err != nil {
		return err
	}
	return st.ReleasePlace(ctx, room, id)
}

func (l *lazyStore) PublishPopulation(ctx context.Context, room, node string, value float64, until time.Time) error {
	st, err := l.get(ctx)
	if err != nil {
		return err
	}
	return st.PublishPopulation(ctx, room, node, value, until)
}

func (l *lazyStore) Population(ctx context.Context, room string, now time.Time) (float64, int, error) {
	st, err := l.get(ctx)
	if err != nil {
		return 0, 0, err
	}
	return st.Population(ctx, room, now)
}

func (l *lazyStore) PublishSketch(ctx context.Context, room, node string, sketch []byte, until time.Time) error {
	st, err := l.get(ctx)
	if err != nil {
		return err
	}
	return st.PublishSketch(ctx, room, node, sketch, until)
}

func (l *lazyStore) Sketches(ctx context.Context, room string, now time.Time) ([][]byte, error) {
	st, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return st.Sketches(ctx, room, now)
}

func (l *lazyStore) ReserveRanks(ctx context.Context, room string, n int64) (int64, error) {
	st, err := l.get(ctx)
	if err != nil {
		return 0, err
	}
	return st.ReserveRanks(ctx, room, n)
}

var _ roomstate.Store = (*lazyStore)(nil)
