package roomstate

// BudgetQueued is how many takers wait for b's lock.
func BudgetQueued(b *Budget) int64 { return b.queued.Load() }

// BudgetWindows is how many windows b keeps a record of.
func BudgetWindows(b *Budget) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.windows)
}
