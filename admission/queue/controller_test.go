package queue

import (
	"testing"
)

func TestController(t *testing.T) {
	c := DefaultController
	tests := []struct {
		name                                  string
		current, target, population, eligible float64
		want                                  float64
	}{
		{"little's law", 0.01, 10, 1000, 0, 0.01},
		{"rise is slew limited", 0.01, 10, 100, 0, 0.0125},
		{"fall is slew limited", 0.01, 10, 100000, 0, 0.005},
		{"nothing known keeps speed", 0.02, 10, 0, 0, 0.02},
		{"feedback on too many eligible", 0.01, 10, 1000, 40, 0.01 * 0.7071067811865476},
		{"bounded above", 0.9, 1e6, 1, 0, 1},
		{"bounded below", 1e-6, 1, 1e9, 0, 1.0 / 86400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := c.Next(tt.current, tt.target, tt.population, tt.eligible)
			if d := got - tt.want; d > 1e-12 || d < -1e-12 {
				t.Fatalf("Next = %v, want %v", got, tt.want)
			}
		})
	}
}
