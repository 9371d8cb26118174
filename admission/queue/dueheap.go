package queue

import (
	"container/heap"
	"time"
)

// Due is an id that falls due at a time: an entry of a DueHeap.
type Due struct {
	ID string
	At time.Time
}

// DueHeap is a min-heap of ids by the time they fall due, for
// container/heap. Entries leave it only by Pop, so its holder skips the
// entries gone stale (an id removed, or due at another time since) and
// rebuilds the heap (DueHeapOf) when they pile up.
type DueHeap []Due

// DueHeapOf makes a heap of entries, which it takes.
func DueHeapOf(entries []Due) DueHeap {
	h := DueHeap(entries)
	heap.Init(&h)
	return h
}

func (h DueHeap) Len() int           { return len(h) }
func (h DueHeap) Less(i, j int) bool { return h[i].At.Before(h[j].At) }
func (h DueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *DueHeap) Push(x any)        { *h = append(*h, x.(Due)) }
func (h *DueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
