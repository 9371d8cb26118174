package wire

import "testing"

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
