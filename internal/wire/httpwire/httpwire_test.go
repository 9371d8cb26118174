package httpwire

import (
	"fmt"
	"testing"

	"github.com/fairgate/fairgate/internal/wire"
)

// bothPaths runs f with the hand-written code on, then off: the answers
// must not depend on the switch.
func bothPaths(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("fast=%v", on), func(t *testing.T) {
			defer wire.SetFast(wire.SetFast(on))
			f(t)
		})
	}
}
