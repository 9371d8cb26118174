package room

import (
	"context"
	"sync"
	"time"

	"github.com/fairgate/fairgate/admission"
)

// Run lets the room's controller adjust the clock once a second until ctx
// ends. One goroutine per room, whichever front door owns it. On a state
// store it also keeps the room in step with the other nodes: polling the
// control state, publishing this node's observations, and ticking for the
// cluster when no other node did (or at once, to release a fifo counter
// held at the pre-queue's end: TickWanted).
func (sh *Shared) Run(ctx context.Context, now func() time.Time) {
	if sh.cluster != nil {
		sh.runCluster(ctx, now)
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			sh.Tick(now())
		}
	}
}

// Tick lets each lane's controller adjust its clock, then splits the rate
// between the lanes that have visitors now. Run calls it once a second;
// a simulation in its own time calls it itself.
func (sh *Shared) Tick(now time.Time) {
	for _, l := range sh.lanes() {
		l.room.Tick(now)
	}
	tally := sh.active.Tally(now, admission.CapacityLookahead)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.tally = tally
	sh.steerLocked(now, time.Time{})
	// The rate was validated when set; rebalance cannot fail on it.
	_ = sh.rebalance(now, false)
}

// runCluster keeps the room in step with its store until ctx ends: it
// polls the control state every poll period and ticks once a second, and
// after a poll that wants a tick (TickWanted).
func (sh *Shared) runCluster(ctx context.Context, now func() time.Time) {
	poll := time.NewTicker(time.Duration(sh.cluster.set.Poll))
	defer poll.Stop()
	tick := time.NewTicker(tickEvery)
	defer tick.Stop()
	sh.runClusterOn(ctx, now, poll.C, tick.C)
}

// runClusterOn is runCluster on the given poll and tick signals. Polls run
// on a goroutine of their own: a tick makes a dozen store calls, and a
// poll waiting behind them would adopt another node's tick late, this
// node reading the room's clock ahead of or behind the room's meanwhile.
func (sh *Shared) runClusterOn(ctx context.Context, now func() time.Time, polls, ticks <-chan time.Time) {
	cl := sh.cluster
	soon := make(chan struct{}, 1) // a tick wanted before the next (TickWanted)
	var polling sync.WaitGroup
	polling.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-polls:
				if !cl.joined.Load() {
					_ = sh.Join(ctx)
					continue
				}
				_ = sh.Poll(ctx, now())
				if sh.TickWanted() {
					select {
					case soon <- struct{}{}:
					default:
					}
				}
			}
		}
	})
	for {
		select {
		case <-ctx.Done():
			polling.Wait() // no poll adopts a state while the budget goes back
			ret, cancel := context.WithTimeout(context.Background(), time.Duration(cl.set.CallTimeout))
			for _, l := range sh.lanes() {
				_ = l.quota.Return(ret)
			}
			cancel()
			return
		case <-soon:
			_ = sh.ClusterTick(context.WithoutCancel(ctx), now())
		case <-ticks:
			// A tick is not cut short when the room stops: the clock it
			// set, which visitors may already have been told, is stored
			// before the node exits (each store call has its deadline).
			_ = sh.ClusterTick(context.WithoutCancel(ctx), now())
			sh.Sweep(ctx, now())
			sh.WriteBack(ctx, now())
		}
	}
}
