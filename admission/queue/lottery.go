package queue

import "math"

// maxThreshold bounds Threshold for v == 1: the threshold of the largest
// lottery number below 1 that a float64 can hold.
var maxThreshold = -math.Log1p(-math.Nextafter(1, 0))

// Threshold is the serving-clock distance a visitor with lottery number v must
// wait: they are eligible once S(now) - srv >= -ln(1 - v). Over uniform v this
// is an exponential draw with mean 1, so waits in seconds have mean tau.
func Threshold(v float64) float64 {
	if v >= 1 {
		return maxThreshold
	}
	return -math.Log1p(-v)
}
