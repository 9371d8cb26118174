package roomstate_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission/roomstate"
)

// apiError is an error as the AWS SDK returns it: a code and an HTTP status.
type apiError struct {
	code   string
	status int
}

func (e apiError) Error() string       { return fmt.Sprintf("api error %s (%d)", e.code, e.status) }
func (e apiError) ErrorCode() string   { return e.code }
func (e apiError) HTTPStatusCode() int { return e.status }

// failingControl is a real store whose SaveControl fails with err.
type failingControl struct {
	roomstate.Store
	err error
}

func (f failingControl) SaveControl(context.Context, string, roomstate.Control, uint64) (uint64, error) {
	return 0, f.err
}

// The guard stops calling the store only when the store itself fails
// (unreachable, timing out, throttling, 5xx), not when it refuses one call:
// a control item over DynamoDB's 400 KB must not make every admission 503.
// After a quick failure the next call waits for the cool-down; after one at
// its deadline (which waited already) the next call tries the store at once.
func TestGuardTripsOnlyWhenTheStoreFails(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        error
		trip, cool bool
	}{
		{"validation (item too large)", fmt.Errorf("save: %w", apiError{"ValidationException", 400}), false, false},
		{"conditional check", roomstate.ErrConflict, false, false},
		{"not found", roomstate.ErrNotFound, false, false},
		{"plain error", errors.New("bad control"), false, false},
		{"deadline", fmt.Errorf("save: %w", context.DeadlineExceeded), true, false},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, true, true},
		{"throttling", apiError{"ProvisionedThroughputExceededException", 400}, true, true},
		{"internal error", apiError{"InternalServerError", 500}, true, true},
		{"503", apiError{"Unknown", 503}, true, true},
		{"store cannot be opened", fmt.Errorf("opening: %w", roomstate.ErrUnavailable), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(1_700_000_000, 0)
			g := roomstate.NewGuard(failingControl{Store: openBolt(t), err: tc.err}, time.Second, func() time.Time { return now }, nil)
			if _, err := g.SaveControl(context.Background(), "r", roomstate.Control{}, 0); !errors.Is(err, tc.err) {
				t.Fatalf("SaveControl: %v, want %v", err, tc.err)
			}
			if g.Failing() != tc.trip {
				t.Fatalf("after %v the guard's Failing is %v, want %v", tc.err, g.Failing(), tc.trip)
			}
			w := roomstate.Window{Index: 1, Limit: 10, Expires: now.Add(time.Hour)}
			_, err := g.ReserveBudget(context.Background(), "r", w, 1)
			if tc.cool != errors.Is(err, roomstate.ErrUnavailable) {
				t.Fatalf("ReserveBudget after %v: %v", tc.err, err)
			}
			if !tc.cool && (err != nil || g.Failing()) {
				t.Fatalf("ReserveBudget after %v: %v, Failing %v; want the store's answer to end the failure", tc.err, err, g.Failing())
			}
			if tc.cool {
				now = now.Add(time.Second)
				if _, err := g.ReserveBudget(context.Background(), "r", w, 1); err != nil || g.Failing() {
					t.Fatalf("ReserveBudget after the cool-down: %v, Failing %v", err, g.Failing())
				}
			}
		})
	}
}

// heldStore is a real store whose LoadControl fails with fail while it is
// set, and otherwise waits for release before answering; entered counts
// the calls that reached it.
type heldStore struct {
	roomstate.Store
	fail    atomic.Pointer[error]
	release chan struct{}
	entered atomic.Int64
}

func (h *heldStore) LoadControl(ctx context.Context, room string) (roomstate.Control, uint64, error) {
	h.entered.Add(1)
	if err := h.fail.Load(); err != nil {
		return roomstate.Control{}, 0, *err
	}
	select {
	case <-h.release:
	case <-ctx.Done():
		return roomstate.Control{}, 0, ctx.Err()
	}
	return h.Store.LoadControl(ctx, room)
}

// After a failure one call at a time tries the store. The others wait a
// moment for its answer: when the store answers they go on to it (a node
// resuming after a stall is sent every request it was sent meanwhile at
// once, while its first call tries the store), and when it does not they
// fail, so a down store holds one request for its deadline, not all of
// them. The first answer ends the failure for every call.
func TestGuardTriesAFailedStoreOneCallAtATime(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		cool    time.Duration // before the next call may try
		answers bool          // within the others' wait
	}{
		{"at its deadline, then answers", fmt.Errorf("load: %w", context.DeadlineExceeded), 0, true},
		{"at its deadline, then silent", fmt.Errorf("load: %w", context.DeadlineExceeded), 0, false},
		{"refused, then answers", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, time.Second, true},
		{"refused, then silent", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const others = 20
			now := time.Unix(1_700_000_000, 0)
			h := &heldStore{Store: openBolt(t), release: make(chan struct{})}
			h.fail.Store(&tc.err)
			g := roomstate.NewGuard(h, time.Second, func() time.Time { return now }, nil)
			wait := time.Hour
			if !tc.answers {
				wait = time.Millisecond
			}
			roomstate.SetGuardWait(g, wait)
			if _, _, err := g.LoadControl(t.Context(), "r"); !errors.Is(err, tc.err) {
				t.Fatalf("first call: %v, want %v", err, tc.err)
			}
			h.fail.Store(nil)
			if tc.cool > 0 {
				if _, _, err := g.LoadControl(t.Context(), "r"); !errors.Is(err, roomstate.ErrUnavailable) {
					t.Fatalf("a call within the cool-down: %v, want ErrUnavailable", err)
				}
				now = now.Add(tc.cool)
			}
			tried := make(chan error, 1)
			go func() {
				_, _, err := g.LoadControl(t.Context(), "r")
				tried <- err
			}()
			for h.entered.Load() < 2 {
				select {
				case err := <-tried:
					t.Fatalf("the call that should try the store answered %v without reaching it", err)
				default:
					runtime.Gosched()
				}
			}
			// Bounded, so that a guard letting them reach the held store
			// fails here rather than hanging.
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			results := make(chan error, others)
			for range others {
				go func() {
					_, _, err := g.LoadControl(ctx, "r")
					results <- err
				}()
			}
			if tc.answers {
				for roomstate.GuardWaiting(g) < others {
					select {
					case err := <-results:
						t.Fatalf("a call answered %v without waiting for the one trying the store", err)
					default:
						runtime.Gosched()
					}
				}
				close(h.release)
			}
			for range others {
				err := <-results
				if tc.answers && !errors.Is(err, roomstate.ErrNotFound) {
					t.Fatalf("a call waiting for a store that answered: %v, want its answer (not found)", err)
				}
				if !tc.answers && !errors.Is(err, roomstate.ErrUnavailable) {
					t.Fatalf("a call while another tries a silent store: %v, want ErrUnavailable", err)
				}
			}
			want := int64(2)
			if tc.answers {
				want += others
			} else {
				close(h.release)
			}
			if err := <-tried; !errors.Is(err, roomstate.ErrNotFound) {
				t.Fatalf("the call trying the store: %v, want its answer (not found)", err)
			}
			if n := h.entered.Load(); n != want {
				t.Fatalf("%d calls reached the store, want %d", n, want)
			}
			if g.Failing() {
				t.Fatal("Failing after the store answered")
			}
			if _, _, err := g.LoadControl(t.Context(), "r"); !errors.Is(err, roomstate.ErrNotFound) {
				t.Fatalf("after the answer: %v, want the store's answer", err)
			}
		})
	}
}

// A call whose caller gave up says nothing of the store: it neither trips
// the guard nor ends a failure.
func TestGuardIgnoresCallsItsCallerAbandoned(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	h := &heldStore{Store: openBolt(t), release: make(chan struct{})}
	g := roomstate.NewGuard(h, time.Second, func() time.Time { return now }, nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
	defer cancel()
	if _, _, err := g.LoadControl(ctx, "r"); !errors.Is(err, context.DeadlineExceeded) || g.Failing() {
		t.Fatalf("abandoned call: %v, Failing %v; want its deadline and no failure", err, g.Failing())
	}
	down := fmt.Errorf("load: %w", context.DeadlineExceeded)
	h.fail.Store(&down)
	if _, _, err := g.LoadControl(t.Context(), "r"); !errors.Is(err, down) || !g.Failing() {
		t.Fatalf("failing call: %v, Failing %v", err, g.Failing())
	}
	h.fail.Store(nil)
	ctx, cancel = context.WithCancel(t.Context())
	cancel()
	if _, _, err := g.LoadControl(ctx, "r"); err == nil || !g.Failing() {
		t.Fatalf("abandoned call after a failure: %v, Failing %v; want the failure kept", err, g.Failing())
	}
}
