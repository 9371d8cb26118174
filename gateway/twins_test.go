package gateway

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/fairgate/fairgate/room"
)

// twinStrategy is how a visitor presents its tokens: given the time and
// every version it holds (oldest first, the newest last), the versions it
// presents now.
type twinStrategy func(now time.Time, versions []ticketJSON) []ticketJSON

// honestPage presents the newest version at its next attempt, as the
// waiting page does.
func honestPage(now time.Time, versions []ticketJSON) []ticketJSON {
	newest := versions[len(versions)-1]
	if now.Before(time.UnixMilli(newest.NextAttempt)) {
		return nil
	}
	return []ticketJSON{newest}
}

// TestNoStrategyBeatsItsTwin: one login waits in two identical rooms (the
// same keys, clock, crowd and draw); in one its page is honest, in the
// other it follows a strategy. The strategy's place is never admitted more
// than a second before its honest twin, in either order.
func TestNoStrategyBeatsItsTwin(t *testing.T) {
	strategies := []struct {
		name string
		next twinStrategy
	}{
		{"polls every 100 ms", func(now time.Time, versions []ticketJSON) []ticketJSON {
			return versions[len(versions)-1:]
		}},
		{"replays its versions at 10 Hz", func(now time.Time, versions []ticketJSON) []ticketJSON {
			// The first (from before the claim) and the latest 20: every
			// old one presented again mints another, without bound.
			if len(versions) > 21 {
				return append(versions[:1:1], versions[len(versions)-20:]...)
			}
			return versions
		}},
		{"presents 20 s late", func(now time.Time, versions []ticketJSON) []ticketJSON {
			return honestPage(now.Add(-20*time.Second), versions)
		}},
	}
	for _, order := range []string{"lottery", "fifo"} {
		for _, st := range strategies {
			t.Run(order+"/"+st.name, func(t *testing.T) {
				honest := twinWorld(t, order, honestPage)
				strategy := twinWorld(t, order, st.next)
				t.Logf("honest twin admitted after %v, the strategy's after %v", honest, strategy)
				if strategy < honest-time.Second {
					t.Errorf("%s got in %v before its honest twin", st.name, honest-strategy)
				}
			})
		}
	}
}

// twinWorld runs a room admitting 2 a second with a crowd of 40 honest
// logins arriving 200 ms apart and, among them, the login "twin" following strategy; it returns
// how long after its arrival the twin's place was admitted. Every login's
// draw is fixed by the room's keys, so two worlds differ only by the twin's
// strategy.
func twinWorld(t *testing.T, order string, strategy twinStrategy) time.Duration {
	t.Helper()
	secret := []byte("site-login-secret-0123456789abcdef")
	cfg := Config{
		Config: room.Config{Room: "sale", State: "queue", QueueOrder: order, Rate: 2, Burst: 1},
		Identity: &Identity{Header: "Authorization", Algorithm: "HS256",
			Key: base64.StdEncoding.EncodeToString(secret), Required: true},
	}
	if order == "fifo" {
		cfg.LuckWindow = Duration(time.Second)
	}
	e := newEnv(t, cfg, nil)
	start := e.clock.Now()
	type visitor struct {
		tab      *tab
		next     twinStrategy
		versions []ticketJSON
		in       time.Time
	}
	var crowd []*visitor
	var twin *visitor
	arrive := func(sub string, next twinStrategy) *visitor {
		login := "Bearer " + signLogin(t, secret, sub, start.Add(time.Hour))
		v := &visitor{tab: e.newTab("Authorization", login), next: next}
		v.versions = []ticketJSON{v.tab.token()}
		crowd = append(crowd, v)
		return v
	}
	for step := range 3000 {
		now := start.Add(time.Duration(step) * 100 * time.Millisecond)
		e.clock.Set(now)
		if step%10 == 0 {
			e.gw.Room().Tick(now)
		}
		if step%2 == 1 && len(crowd) < 40 {
			arrive(fmt.Sprint("fan-", len(crowd)), honestPage)
		}
		if step == 20 {
			twin = arrive("twin", strategy)
		}
		for _, v := range crowd {
			if !v.in.IsZero() {
				continue
			}
			for _, tk := range v.next(now, v.versions) {
				status, back := v.tab.admit(tk)
				switch status {
				case http.StatusOK:
					v.in = now
				case http.StatusTooManyRequests:
					if back.Token != "" && back.Token != v.versions[len(v.versions)-1].Token {
						v.versions = append(v.versions, back)
					}
				default:
					t.Fatalf("%s: %d", order, status)
				}
				if !v.in.IsZero() {
					break
				}
			}
		}
		if twin != nil && !twin.in.IsZero() {
			return twin.in.Sub(start.Add(2 * time.Second))
		}
	}
	t.Fatal("the twin was not admitted in 300 s")
	return 0
}
