package proxy

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fairgate/fairgate/admission"
)

// Shared is the part of a room that must outlive any one Gateway: the
// serving clock, the bucket and the used-token ledger. The Caddy module keeps
// it in a caddy.UsagePool keyed by room, so a config reload changes nothing a
// queued visitor can notice.
type Shared struct {
	Room   *admission.Room
	Ledger *admission.MemoryLedger
	// generated keys, when the config had none: kept so a reload does not
	// invalidate every token.
	generated *admission.KeyRing

	mu      sync.Mutex
	applied applied
	reason  string // why the room is closed: "sold_out" or ""
	counts  *metrics
}

// metrics returns the room's collectors, creating them once.
func (sh *Shared) metrics(now func() time.Time) *metrics {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.counts == nil {
		sh.counts = newRoomMetrics(sh, now)
	}
	return sh.counts
}

// applied is what the config last asked for, so a reload re-applies only
// what it changed and never reverts a live change made by the admin API.
type applied struct {
	state      admission.State
	saleStart  time.Time
	rate       float64
	burst      float64
	difficulty int
	tau        time.Duration
	adaptive   bool
	ledgerSize int
}

// NewShared creates a room's shared state from its config; clock is the
// time its clock starts at and its used-token memory expires by.
func NewShared(cfg Config, clock func() time.Time) (*Shared, error) {
	s, err := cfg.settle()
	if err != nil {
		return nil, err
	}
	room, err := admission.NewRoom(s.roomConfig(), clock())
	if err != nil {
		return nil, err
	}
	sh := &Shared{
		Room:    room,
		Ledger:  admission.NewMemoryLedger(s.LedgerSize, clock),
		applied: appliedOf(s),
	}
	return sh, nil
}

func appliedOf(s settings) applied {
	return applied{state: s.state, saleStart: s.saleStart, rate: s.Rate, burst: s.Burst, difficulty: s.difficulty,
		tau: time.Duration(s.Tau), adaptive: !s.FixedSpeed, ledgerSize: s.LedgerSize}
}

// reconfigure applies what a new config changed. Every room setting a
// config holds is applied here, so each takes effect on a reload.
func (sh *Shared) reconfigure(s settings, now time.Time) error {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	want := appliedOf(s)
	if want.state != sh.applied.state || !want.saleStart.Equal(sh.applied.saleStart) {
		if err := sh.Room.SetState(want.state, want.saleStart, now); err != nil {
			return fmt.Errorf("applying state: %w", err)
		}
	}
	if want.rate != sh.applied.rate || want.burst != sh.applied.burst {
		if err := sh.Room.SetRate(want.rate, want.burst, now); err != nil {
			return fmt.Errorf("applying rate: %w", err)
		}
	}
	if want.difficulty != sh.applied.difficulty {
		if err := sh.Room.SetDifficulty(want.difficulty); err != nil {
			return fmt.Errorf("applying difficulty: %w", err)
		}
	}
	if want.tau != sh.applied.tau || want.adaptive != sh.applied.adaptive {
		if err := sh.Room.SetTau(want.tau, want.adaptive, now); err != nil {
			return fmt.Errorf("applying tau: %w", err)
		}
	}
	if want.ledgerSize != sh.applied.ledgerSize {
		sh.Ledger.SetCapacity(want.ledgerSize)
	}
	sh.applied = want
	return nil
}

// ClosedReason is why the room is closed ("sold_out" or "").
func (sh *Shared) ClosedReason() string {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.reason
}

func (sh *Shared) setClosedReason(r string) {
	sh.mu.Lock()
	sh.reason = r
	sh.mu.Unlock()
}

// keys returns the configured key ring, or generated keys kept for the
// room's lifetime. generated reports the latter.
func (sh *Shared) keys(cfg admission.KeysConfig) (ring *admission.KeyRing, generated bool, err error) {
	if len(cfg.Keys) > 0 {
		ring, err = cfg.Load(admission.Environment{})
		return ring, false, err
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.generated == nil {
		gen, err := admission.GenerateKeys("generated")
		if err != nil {
			return nil, false, err
		}
		if sh.generated, err = gen.Load(admission.Environment{}); err != nil {
			return nil, false, err
		}
	}
	return sh.generated, true, nil
}

// Run lets the room's controller adjust the clock once a second until ctx
// ends. One goroutine per room, whichever front door owns it.
func (sh *Shared) Run(ctx context.Context, now func() time.Time) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			sh.Room.Tick(now())
		}
	}
}
