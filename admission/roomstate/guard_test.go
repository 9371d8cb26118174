package roomstate_test

import (
	"context"
	"errors"
	"fmt"
	"net"
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
func TestGuardTripsOnlyWhenTheStoreFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		trip bool
	}{
		{"validation (item too large)", fmt.Errorf("save: %w", apiError{"ValidationException", 400}), false},
		{"conditional check", roomstate.ErrConflict, false},
		{"not found", roomstate.ErrNotFound, false},
		{"plain error", errors.New("bad control"), false},
		{"deadline", fmt.Errorf("save: %w", context.DeadlineExceeded), true},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, true},
		{"throttling", apiError{"ProvisionedThroughputExceededException", 400}, true},
		{"internal error", apiError{"InternalServerError", 500}, true},
		{"503", apiError{"Unknown", 503}, true},
		{"store cannot be opened", fmt.Errorf("opening: %w", roomstate.ErrUnavailable), true},
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
			if tc.trip != errors.Is(err, roomstate.ErrUnavailable) {
				t.Fatalf("ReserveBudget after %v: %v", tc.err, err)
			}
		})
	}
}
