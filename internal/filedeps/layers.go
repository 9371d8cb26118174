package filedeps

import (
	"math/bits"
	"slices"
)

// exactLimit is the largest cycle whose order is searched exhaustively for
// the fewest edges pointing back up; larger ones are ordered greedily.
const exactLimit = 20

// Layers is a graph's files stacked from the bottom up.
type Layers struct {
	// Cycles are the strongly connected components of more than one file:
	// each file in one reaches every other. Files within each are sorted.
	Cycles [][]string
	// Layer gives each file its layer: 0 for files that use no other file,
	// else one above the highest file it uses along edges that point down.
	Layer map[string]int
	// Count is the number of layers.
	Count int
	// Back are the edges from a file to one in its own or a higher layer:
	// the fewest that leave the rest a stack, when every cycle has at most
	// exactLimit files.
	Back []Edge
}

// Stack orders g's files into layers.
func (g Graph) Stack() Layers {
	index := map[string]int{}
	for i, f := range g.Files {
		index[f] = i
	}
	out := make([][]int, len(g.Files))
	for _, e := range g.Edges {
		out[index[e.From]] = append(out[index[e.From]], index[e.To])
	}

	var l Layers
	comps := components(out)
	// rank places each file in the order of its component: within a
	// component, a higher rank sits lower, so an edge to a lower rank points
	// back up.
	rank := make([]int, len(g.Files))
	compOf := make([]int, len(g.Files))
	for c, comp := range comps {
		for _, v := range comp {
			compOf[v] = c
		}
		if len(comp) < 2 {
			continue
		}
		var names []string
		for _, v := range comp {
			names = append(names, g.Files[v])
		}
		slices.Sort(names)
		l.Cycles = append(l.Cycles, names)
		for i, v := range orderComponent(comp, out) {
			rank[v] = i
		}
	}

	down := func(u, v int) bool {
		return compOf[u] != compOf[v] || rank[u] < rank[v]
	}
	layer := make([]int, len(g.Files))
	done := make([]bool, len(g.Files))
	var place func(u int) int
	place = func(u int) int {
		if done[u] {
			return layer[u]
		}
		for _, v := range out[u] {
			if down(u, v) {
				layer[u] = max(layer[u], place(v)+1)
			}
		}
		done[u] = true
		return layer[u]
	}
	l.Layer = map[string]int{}
	for u, f := range g.Files {
		l.Layer[f] = place(u)
		l.Count = max(l.Count, layer[u]+1)
	}
	for _, e := range g.Edges {
		if l.Layer[e.From] <= l.Layer[e.To] {
			l.Back = append(l.Back, e)
		}
	}
	slices.SortFunc(l.Cycles, func(a, b []string) int { return cmpString(a[0], b[0]) })
	return l
}

// components returns the strongly connected components of the graph out
// (Tarjan's algorithm), each component's vertices ascending.
func components(out [][]int) [][]int {
	n := len(out)
	index := make([]int, n)
	low := make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	var comps [][]int
	next := 0
	var visit func(u int)
	visit = func(u int) {
		index[u], low[u] = next, next
		next++
		stack = append(stack, u)
		onStack[u] = true
		for _, v := range out[u] {
			switch {
			case index[v] < 0:
				visit(v)
				low[u] = min(low[u], low[v])
			case onStack[v]:
				low[u] = min(low[u], index[v])
			}
		}
		if low[u] != index[u] {
			return
		}
		var comp []int
		for {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[v] = false
			comp = append(comp, v)
			if v == u {
				break
			}
		}
		slices.Sort(comp)
		comps = append(comps, comp)
	}
	for u := range out {
		if index[u] < 0 {
			visit(u)
		}
	}
	return comps
}

// orderComponent orders a cycle's files from the top down so that as few
// edges as possible point from a later file to an earlier one.
func orderComponent(comp []int, out [][]int) []int {
	pos := map[int]int{}
	for i, v := range comp {
		pos[v] = i
	}
	// succ[i] is the set of comp positions that comp[i] uses.
	succ := make([]uint64, len(comp))
	for i, u := range comp {
		for _, v := range out[u] {
			if j, ok := pos[v]; ok && j < 64 {
				succ[i] |= 1 << j
			}
		}
	}
	var order []int
	switch {
	case len(comp) <= exactLimit:
		order = exactOrder(succ)
	case len(comp) <= 64:
		order = greedyOrder(succ)
	default:
		// Too many files for a bit set: keep them in name order.
		order = make([]int, len(comp))
		for i := range order {
			order[i] = i
		}
	}
	for i, p := range order {
		order[i] = comp[p]
	}
	return order
}

// exactOrder finds an order with the fewest back edges by dynamic
// programming over the sets of files placed first.
func exactOrder(succ []uint64) []int {
	n := len(succ)
	full := uint64(1)<<n - 1
	cost := make([]int, full+1)
	last := make([]int8, full+1)
	for s := uint64(1); s <= full; s++ {
		cost[s] = -1
		for x := range n {
			if s&(1<<x) == 0 {
				continue
			}
			prev := s &^ (1 << x)
			// x placed after prev: its uses of prev point back up.
			c := cost[prev] + bits.OnesCount64(succ[x]&prev)
			if cost[s] < 0 || c < cost[s] {
				cost[s], last[s] = c, int8(x)
			}
		}
	}
	order := make([]int, n)
	for s, i := full, n-1; s != 0; i-- {
		order[i] = int(last[s])
		s &^= 1 << last[s]
	}
	return order
}

// greedyOrder is Eades, Lin and Smyth's heuristic: take files that nothing
// left uses from the top and files that use nothing left from the bottom;
// otherwise take from the top the file with the most uses over being used.
func greedyOrder(succ []uint64) []int {
	n := len(succ)
	left := uint64(1)<<n - 1
	var top, bottom []int
	usedBy := func(x int) int {
		c := 0
		for y := range n {
			if left&(1<<y) != 0 && succ[y]&(1<<x) != 0 {
				c++
			}
		}
		return c
	}
	for left != 0 {
		best, bestScore := -1, 0
		for x := range n {
			if left&(1<<x) == 0 {
				continue
			}
			outs, ins := bits.OnesCount64(succ[x]&left&^(1<<x)), usedBy(x)
			switch {
			case outs == 0:
				bottom = append(bottom, x)
				left &^= 1 << x
				continue
			case ins == 0:
				top = append(top, x)
				left &^= 1 << x
				continue
			}
			if best < 0 || outs-ins > bestScore {
				best, bestScore = x, outs-ins
			}
		}
		if best >= 0 && left&(1<<best) != 0 {
			top = append(top, best)
			left &^= 1 << best
		}
	}
	slices.Reverse(bottom)
	return append(top, bottom...)
}
