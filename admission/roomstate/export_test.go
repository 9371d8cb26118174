package roomstate

import "time"

// SetGuardWait sets how long g's calls wait for the call trying its store.
func SetGuardWait(g *Guard, d time.Duration) { g.wait = d }

// GuardWaiting is how many of g's calls wait for the call trying its store.
func GuardWaiting(g *Guard) int64 { return g.waiting.Load() }

// BudgetQueued is how many takers wait for b's lock.
func BudgetQueued(b *Budget) int64 { return b.queued.Load() }

// BudgetWindows is how many windows b keeps a record of.
func BudgetWindows(b *Budget) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.windows)
}
