package gateway

import (
	"errors"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/room"
)

// TestReloadAppliesEveryRoomOption: each room setting a reload changes takes
// effect once the new gateway's config is applied, and none before.
func TestReloadAppliesEveryRoomOption(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "queue", Rate: 5, Tau: Duration(time.Minute), FixedSpeed: true, LedgerSize: 10}}, nil)
	sh := e.gw.Room()
	next := Config{
		Config: room.Config{Room: "sale", Keys: testKeys, State: "paused", Rate: 7, Burst: 9, Difficulty: intp(6), Tau: Duration(4 * time.Second), FixedSpeed: true, LedgerSize: 1},
	}
	gw2, err := New(next, sh, Options{Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer gw2.Close()
	now := e.clock.Now()
	if st := sh.Status(now); st.State != "queue" || st.Rate != 5 || st.Difficulty != 4 {
		t.Fatalf("New changed the room before ApplyConfig: %+v", st)
	}
	if err := gw2.ApplyConfig(); err != nil {
		t.Fatal(err)
	}
	st := sh.Status(now)
	if st.State != "paused" || st.Rate != 7 || st.Burst != 9 || st.Difficulty != 6 {
		t.Fatalf("after ApplyConfig: %+v", st)
	}
	if err := sh.Room.SetState("queue", time.Time{}, now); err != nil {
		t.Fatal(err)
	}
	if speed := sh.Status(now).ClockSpeed; speed != 0.25 {
		t.Fatalf("tau 4s, fixed speed: clock speed %v, want 0.25", speed)
	}
	// ledger_size 1: a second used token does not fit.
	used := queue.Place{State: queue.PlaceUsed}
	if _, _, err := sh.Ledger.Hold(t.Context(), "a", used, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := sh.Ledger.Hold(t.Context(), "b", used, now.Add(time.Hour)); !errors.Is(err, queue.ErrLedgerFull) {
		t.Fatalf("ledger_size 1 took a second place: %v", err)
	}
}
