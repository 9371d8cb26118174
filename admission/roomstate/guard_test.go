package roomstate_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
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
// set, and otherwise waits for release, then panics once when boom is set,
// fails with then when that is set, or answers; entered counts the calls
// that reached it.
type heldStore struct {
	roomstate.Store
	fail    atomic.Pointer[error]
	then    atomic.Pointer[error]
	boom    atomic.Bool // panic instead
	release chan struct{}
	freed   sync.Once
	entered atomic.Int64
}

// newHeldStore is a held store released when the test ends, so that a
// broken guard fails the test rather than leaving calls held.
func newHeldStore(t *testing.T) *heldStore {
	h := &heldStore{Store: openBolt(t), release: make(chan struct{})}
	t.Cleanup(h.free)
	return h
}

// free releases the held calls, once.
func (h *heldStore) free() { h.freed.Do(func() { close(h.release) }) }

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
	if h.boom.CompareAndSwap(true, false) {
		panic("store failed inside")
	}
	if err := h.then.Load(); err != nil {
		return roomstate.Control{}, 0, *err
	}
	return h.Store.LoadControl(ctx, room)
}

// until spins until cond holds, and fails the test after 10 s: a broken
// guard fails it rather than hanging it.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("10 s passed waiting for %s", what)
		}
		runtime.Gosched()
	}
}

// recv is the error a load sends, failing the test after 10 s.
func recv(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("10 s passed waiting for a call's answer")
		return nil
	}
}

// load is one LoadControl through g, its error sent on the returned
// channel (a panic's value as an error).
func load(ctx context.Context, g *roomstate.Guard) <-chan error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("panic: %v", p)
			}
		}()
		_, _, err := g.LoadControl(ctx, "r")
		done <- err
	}()
	return done
}

var (
	errDeadline = fmt.Errorf("load: %w", context.DeadlineExceeded)
	errRefused  = error(&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")})
)

// After a failure one call at a time tries the store. The others wait a
// moment for its answer: when the store answers they go on to it (a node
// resuming after a stall is sent every request it was sent meanwhile at
// once, while its first call tries the store); when it fails or stays
// silent they fail, so a down store holds one request for its deadline,
// not all of them. The first answer ends the failure for every call.
func TestGuardTriesAFailedStoreOneCallAtATime(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first error
		cool  time.Duration // before the next call may try
		trial string        // what the call trying the store gets: "answer", "silence", "refusal"
	}{
		{"at its deadline, then an answer", errDeadline, 0, "answer"},
		{"at its deadline, then silence", errDeadline, 0, "silence"},
		{"at its deadline, then a refusal", errDeadline, 0, "refusal"},
		{"refused, then an answer", errRefused, time.Second, "answer"},
		{"refused, then silence", errRefused, time.Second, "silence"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const others = 20
			now := time.Unix(1_700_000_000, 0)
			h := newHeldStore(t)
			h.fail.Store(&tc.first)
			g := roomstate.NewGuard(h, time.Second, func() time.Time { return now }, nil)
			wait := 10 * time.Second
			if tc.trial == "silence" {
				wait = time.Millisecond
			}
			roomstate.SetGuardWait(g, wait)
			if _, _, err := g.LoadControl(t.Context(), "r"); !errors.Is(err, tc.first) {
				t.Fatalf("first call: %v, want %v", err, tc.first)
			}
			h.fail.Store(nil)
			if tc.trial == "refusal" {
				h.then.Store(&errRefused)
			}
			if tc.cool > 0 {
				if _, _, err := g.LoadControl(t.Context(), "r"); !errors.Is(err, roomstate.ErrUnavailable) {
					t.Fatalf("a call within the cool-down: %v, want ErrUnavailable", err)
				}
				now = now.Add(tc.cool)
			}
			tried := load(t.Context(), g)
			until(t, "the call trying the store to reach it", func() bool { return h.entered.Load() == 2 })
			results := make([]<-chan error, others)
			for i := range results {
				results[i] = load(t.Context(), g)
			}
			if tc.trial != "silence" {
				until(t, "the other calls to wait", func() bool { return roomstate.GuardWaiting(g) == others })
				h.free()
			}
			for _, r := range results {
				err := recv(t, r)
				if tc.trial == "answer" && !errors.Is(err, roomstate.ErrNotFound) {
					t.Fatalf("a call waiting for a store that answered: %v, want its answer (not found)", err)
				}
				if tc.trial != "answer" && !errors.Is(err, roomstate.ErrUnavailable) {
					t.Fatalf("a call while another tries a store that gets %s: %v, want ErrUnavailable", tc.trial, err)
				}
			}
			want := int64(2)
			if tc.trial == "answer" {
				want += others
			}
			if n := h.entered.Load(); n != want {
				t.Fatalf("%d calls reached the store, want %d", n, want)
			}
			if tc.trial == "silence" {
				h.free()
			}
			wantTried := roomstate.ErrNotFound
			if tc.trial == "refusal" {
				wantTried = errRefused
			}
			if err := recv(t, tried); !errors.Is(err, wantTried) {
				t.Fatalf("the call trying the store: %v, want %v", err, wantTried)
			}
			if g.Failing() != (tc.trial == "refusal") {
				t.Fatalf("Failing %v after the call trying the store got %s", g.Failing(), tc.trial)
			}
			if tc.trial == "refusal" {
				return
			}
			if _, _, err := g.LoadControl(t.Context(), "r"); !errors.Is(err, roomstate.ErrNotFound) {
				t.Fatalf("after the answer: %v, want the store's answer", err)
			}
		})
	}
}

// failedGuard is a guard on a held store whose first call timed out, the
// store's failure cleared after it; its calls wait up to wait for the one
// trying the store.
func failedGuard(t *testing.T, wait time.Duration) (*roomstate.Guard, *heldStore) {
	t.Helper()
	h := newHeldStore(t)
	h.fail.Store(&errDeadline)
	g := roomstate.NewGuard(h, time.Second, func() time.Time { return time.Unix(1_700_000_000, 0) }, nil)
	roomstate.SetGuardWait(g, wait)
	if _, _, err := g.LoadControl(t.Context(), "r"); !errors.Is(err, errDeadline) {
		t.Fatalf("first call: %v, want %v", err, errDeadline)
	}
	h.fail.Store(nil)
	return g, h
}

// tryAndWait starts the call trying g's store (on ctx), held there, and
// one call waiting for it.
func tryAndWait(ctx context.Context, t *testing.T, g *roomstate.Guard, h *heldStore) (tried, waiting <-chan error) {
	t.Helper()
	tried = load(ctx, g)
	until(t, "the call trying the store to reach it", func() bool { return h.entered.Load() == 2 })
	waiting = load(t.Context(), g)
	until(t, "a call to wait", func() bool { return roomstate.GuardWaiting(g) == 1 })
	return tried, waiting
}

// The call trying the store whose caller gives up hands the try to one
// of the calls waiting; one that times out, having tried, leaves the next
// try for after the cool-down (a silent store is asked once per deadline
// and cool-down, not by every call of a request in turn); and a waiting
// call waits no longer than its own deadline.
func TestGuardTrialEnds(t *testing.T) {
	t.Run("abandoned, handed over", func(t *testing.T) {
		g, h := failedGuard(t, 10*time.Second)
		ctx, cancel := context.WithCancel(t.Context())
		tried, waiting := tryAndWait(ctx, t, g, h)
		cancel()
		if err := recv(t, tried); !errors.Is(err, context.Canceled) {
			t.Fatalf("the abandoned call: %v, want its context's error", err)
		}
		until(t, "the waiting call to try the store", func() bool { return h.entered.Load() == 3 })
		h.free()
		if err := recv(t, waiting); !errors.Is(err, roomstate.ErrNotFound) || g.Failing() {
			t.Fatalf("the call that took the try over: %v, Failing %v; want the store's answer", err, g.Failing())
		}
	})
	t.Run("panicked, handed over", func(t *testing.T) {
		g, h := failedGuard(t, 10*time.Second)
		tried, waiting := tryAndWait(t.Context(), t, g, h)
		h.boom.Store(true)
		h.free()
		if err := recv(t, tried); err == nil || !strings.HasPrefix(err.Error(), "panic") {
			t.Fatalf("the call trying the store: %v, want its panic", err)
		}
		if err := recv(t, waiting); !errors.Is(err, roomstate.ErrNotFound) || h.entered.Load() != 3 {
			t.Fatalf("the waiting call: %v after %d calls reached the store; want it to try the store (3)", err, h.entered.Load())
		}
	})
	t.Run("timed out, cools down", func(t *testing.T) {
		now := time.Unix(1_700_000_000, 0)
		h := newHeldStore(t)
		h.fail.Store(&errDeadline)
		g := roomstate.NewGuard(h, time.Second, func() time.Time { return now }, nil)
		g.LoadControl(t.Context(), "r")
		if _, _, err := g.LoadControl(t.Context(), "r"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("the call trying the store: %v, want its deadline", err)
		}
		if _, _, err := g.LoadControl(t.Context(), "r"); !errors.Is(err, roomstate.ErrUnavailable) || h.entered.Load() != 2 {
			t.Fatalf("a call after a try timed out: %v, %d calls reached the store; want ErrUnavailable, 2", err, h.entered.Load())
		}
		now = now.Add(time.Second)
		h.fail.Store(nil)
		h.free()
		if _, _, err := g.LoadControl(t.Context(), "r"); !errors.Is(err, roomstate.ErrNotFound) {
			t.Fatalf("after the cool-down: %v, want the store's answer", err)
		}
	})
	t.Run("a waiting call's deadline", func(t *testing.T) {
		g, h := failedGuard(t, time.Hour)
		tried := load(t.Context(), g)
		until(t, "the call trying the store to reach it", func() bool { return h.entered.Load() == 2 })
		ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
		defer cancel()
		if _, _, err := g.LoadControl(ctx, "r"); !errors.Is(err, roomstate.ErrUnavailable) {
			t.Fatalf("a waiting call past its deadline: %v, want ErrUnavailable", err)
		}
		h.free()
		recv(t, tried)
	})
}

// What a call learns counts only if nothing was learnt since it began: a
// call sent before a failure that answers after it does not end the
// failure, and the other calls in flight that fail with it do not trip
// the guard again.
func TestGuardIgnoresStaleOutcomes(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	h := newHeldStore(t)
	g := roomstate.NewGuard(h, time.Second, func() time.Time { return now }, nil)
	early := load(t.Context(), g)
	until(t, "the early call to reach the store", func() bool { return h.entered.Load() == 1 })
	h.fail.Store(&errRefused)
	if _, _, err := g.LoadControl(t.Context(), "r"); !errors.Is(err, errRefused) || !g.Failing() {
		t.Fatalf("failing call: %v, Failing %v", err, g.Failing())
	}
	h.fail.Store(nil)
	h.free()
	if err := recv(t, early); !errors.Is(err, roomstate.ErrNotFound) {
		t.Fatalf("the early call: %v, want the store's answer", err)
	}
	if !g.Failing() {
		t.Fatal("an answer to a call sent before the failure ended it")
	}

	// A call sent before the failure that fails after the store answered
	// again does not trip the guard again.
	late := newHeldStore(t)
	g = roomstate.NewGuard(late, time.Second, func() time.Time { return now }, nil)
	early = load(t.Context(), g)
	until(t, "the early call to reach the store", func() bool { return late.entered.Load() == 1 })
	late.fail.Store(&errRefused)
	g.LoadControl(t.Context(), "r")
	late.fail.Store(nil)
	now = now.Add(time.Second)
	w := roomstate.Window{Index: 1, Limit: 10, Expires: now.Add(time.Hour)}
	if _, err := g.ReserveBudget(t.Context(), "r", w, 1); err != nil || g.Failing() {
		t.Fatalf("the call trying the store: %v, Failing %v; want it answered", err, g.Failing())
	}
	late.then.Store(&errRefused)
	late.free()
	if err := recv(t, early); !errors.Is(err, errRefused) {
		t.Fatalf("the early call: %v, want %v", err, errRefused)
	}
	if g.Failing() {
		t.Fatal("a failure of a call sent before the store answered again tripped the guard")
	}
}

// A call whose caller gave up says nothing of the store: it neither trips
// the guard nor ends a failure.
func TestGuardIgnoresCallsItsCallerAbandoned(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	h := newHeldStore(t)
	g := roomstate.NewGuard(h, time.Second, func() time.Time { return now }, nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
	defer cancel()
	if _, _, err := g.LoadControl(ctx, "r"); !errors.Is(err, context.DeadlineExceeded) || g.Failing() {
		t.Fatalf("abandoned call: %v, Failing %v; want its deadline and no failure", err, g.Failing())
	}
	h.fail.Store(&errDeadline)
	if _, _, err := g.LoadControl(t.Context(), "r"); !errors.Is(err, errDeadline) || !g.Failing() {
		t.Fatalf("failing call: %v, Failing %v", err, g.Failing())
	}
	h.fail.Store(nil)
	ctx, cancel = context.WithCancel(t.Context())
	cancel()
	if _, _, err := g.LoadControl(ctx, "r"); err == nil || !g.Failing() {
		t.Fatalf("abandoned call after a failure: %v, Failing %v; want the failure kept", err, g.Failing())
	}
}
