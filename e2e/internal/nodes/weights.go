package nodes

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseWeights reads a crowd's share of each node, comma-separated
// ("0.6,0.3,0.1" or "60,30,10"), as fractions that sum to 1.
func ParseWeights(s string) ([]float64, error) {
	var out []float64
	sum := 0.0
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("weights %q: %q is not a share", s, f)
		}
		out = append(out, v)
		sum += v
	}
	if sum <= 0 {
		return nil, fmt.Errorf("weights %q: no node has a share", s)
	}
	for i := range out {
		out[i] /= sum
	}
	return out, nil
}

// Pick is the node a uniform x in [0, 1) falls on, by weights that sum
// to 1.
func Pick(weights []float64, x float64) int {
	for i, w := range weights {
		if x < w {
			return i
		}
		x -= w
	}
	return len(weights) - 1
}
