package admission

// LaneRates splits a room's admission rate between its lanes
// (docs/FAIRNESS.md, "Lanes"). shares[i] is lane i's configured share of
// total (the default lane's is one minus the others'); active[i] says
// whether anyone waits in lane i.
//
// The split is work-conserving: the active lanes share the whole rate in
// proportion to their shares, so the share of an empty lane is not lost but
// goes to the lanes that have visitors. An inactive lane keeps its
// configured rate, so the first visitors of a lane that fills up again are
// served at once while the next split catches up. With no lane active every
// lane gets its configured share.
func LaneRates(total float64, shares []float64, active []bool) []float64 {
	sum := 0.0
	for i, s := range shares {
		if active[i] {
			sum += s
		}
	}
	rates := make([]float64, len(shares))
	for i, s := range shares {
		rates[i] = total * s
		if active[i] && sum > 0 {
			rates[i] = total * s / sum
		}
	}
	return rates
}
