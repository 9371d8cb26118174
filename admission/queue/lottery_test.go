package queue

import (
	"math"
	"testing"
)

func TestThreshold(t *testing.T) {
	tests := []struct{ v, want float64 }{
		{0, 0},
		{0.5, math.Ln2},
		{1 - 1/math.E, 1},
	}
	for _, tt := range tests {
		if got := Threshold(tt.v); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("Threshold(%v) = %v, want %v", tt.v, got, tt.want)
		}
	}
	if got := Threshold(1); math.IsInf(got, 0) || got < 36 || got > 38 {
		t.Errorf("Threshold(1) = %v, want a finite bound near 36.7", got)
	}
}
