package wire

import (
	"fmt"
	"testing"
)

// bothPaths runs f with the hand-written code on, then off: the answers
// must not depend on the switch.
func bothPaths(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("fast=%v", on), func(t *testing.T) {
			defer SetFast(SetFast(on))
			f(t)
		})
	}
}

func TestSetFast(t *testing.T) {
	if !Fast() {
		t.Fatal("the hand-written code is off by default")
	}
	if was := SetFast(false); !was || Fast() {
		t.Fatalf("SetFast(false) = %v, then Fast() = %v", was, Fast())
	}
	if was := SetFast(true); was || !Fast() {
		t.Fatalf("SetFast(true) = %v, then Fast() = %v", was, Fast())
	}
}
