package seats

import (
	"cmp"
	"slices"
	"time"
)

// BestTogether picks count seats next to each other in one row that are
// available at now and not in skip, leaving no single-seat gap at either end
// of the run they come from (a lone seat between taken ones rarely sells).
// Rows come in the order of the seat map (block, row); within a run the
// window at an end is preferred, keeping the rest of the run whole. nil
// means no such seats.
func BestTogether(seats []Seat, count int, now time.Time, skip map[string]bool) []string {
	byRow := map[[2]string][]Seat{}
	var order [][2]string
	for _, s := range seats {
		key := [2]string{s.Block, s.Row}
		if _, ok := byRow[key]; !ok {
			order = append(order, key)
		}
		byRow[key] = append(byRow[key], s)
	}
	for _, key := range order {
		row := byRow[key]
		slices.SortFunc(row, func(a, b Seat) int { return cmp.Compare(a.Number, b.Number) })
		for _, run := range freeRuns(row, now, skip) {
			if pick := window(run, count); pick != nil {
				return pick
			}
		}
	}
	return nil
}

// freeRuns splits a sorted row into runs of consecutive free seats.
func freeRuns(row []Seat, now time.Time, skip map[string]bool) [][]Seat {
	var runs [][]Seat
	var cur []Seat
	for i, s := range row {
		free := s.StatusAt(now) == Available && !skip[s.ID]
		adjacent := i > 0 && row[i-1].Number+1 == s.Number
		if !free || !adjacent {
			if len(cur) > 0 {
				runs = append(runs, cur)
			}
			cur = nil
		}
		if free {
			cur = append(cur, s)
		}
	}
	if len(cur) > 0 {
		runs = append(runs, cur)
	}
	return runs
}

// window chooses count seats at the start of a run, unless every choice
// would leave a lone seat: a run exactly one seat longer than needed.
func window(run []Seat, count int) []string {
	if len(run) < count || len(run) == count+1 {
		return nil
	}
	out := make([]string, count)
	for i := range count {
		out[i] = run[i].ID
	}
	return out
}
