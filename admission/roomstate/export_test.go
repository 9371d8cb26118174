package roomstate

// BudgetQueued is how many takers wait for b's lock.
func BudgetQueued(b *Budget) int64 { return b.queued.Load() }
