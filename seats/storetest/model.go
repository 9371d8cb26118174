package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/fairgate/fairgate/seats"
)

// model is the reference: the same rules applied to plain maps.
type model struct {
	seats    map[string]*seats.Seat
	sessions map[string]*seats.Session
	tokens   map[string]bool
}

func (m *model) open(sess seats.Session, now time.Time) error {
	if m.tokens[sess.TokenID] {
		return seats.ErrTokenUsed
	}
	for _, other := range m.sessions {
		if other.UserID == sess.UserID && other.EventID == sess.EventID && other.Live(now) {
			return &seats.SessionExistsError{Session: other.ID}
		}
	}
	m.tokens[sess.TokenID] = true
	cp := sess
	m.sessions[sess.ID] = &cp
	return nil
}

// apply runs a rule on copies and keeps them only if it succeeds, as a
// transaction would.
func (m *model) apply(id string, ids []string, rule func(*seats.Session, []*seats.Seat) error) error {
	orig, ok := m.sessions[id]
	if !ok {
		return seats.ErrNotFound
	}
	sess := *orig
	sess.Seats = slices.Clone(orig.Seats)
	if ids == nil {
		ids = sess.Seats
	}
	list := make([]*seats.Seat, len(ids))
	for i, sid := range ids {
		if s, ok := m.seats[sid]; ok {
			cp := *s
			list[i] = &cp
		}
	}
	if err := rule(&sess, list); err != nil {
		return err
	}
	for _, s := range list {
		if s != nil {
			m.seats[s.ID] = s
		}
	}
	m.sessions[id] = &sess
	return nil
}

// outcome classes errors so store and model can be compared.
func outcome(err error) string {
	var taken *seats.TakenError
	var exists *seats.SessionExistsError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &taken):
		slices.Sort(taken.Seats)
		return fmt.Sprintf("taken %v", taken.Seats)
	case errors.As(err, &exists):
		return "exists " + exists.Session
	}
	for _, e := range []error{seats.ErrTokenUsed, seats.ErrExpired, seats.ErrState, seats.ErrLimit, seats.ErrNotHeld, seats.ErrUnknownSeat, seats.ErrNotFound, seats.ErrInvalid} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	return "unexpected: " + err.Error()
}

// testModel: 400 random operations from six users on twelve contested
// seats, with the clock jumping ahead now and then. After every step the
// store agrees with the model and the invariants hold: no seat reserved
// twice or by a session that did not confirm it, no lock without its
// session holding it, no session over its limit, counts true.
func testModel(t *testing.T, newStore func(t *testing.T) seats.Store) {
	f := setup(t, newStore)
	m := &model{seats: map[string]*seats.Seat{}, sessions: map[string]*seats.Session{}, tokens: map[string]bool{}}
	for _, sec := range []string{"A", "AB"} {
		list, err := f.store.SectionSeats(f.ctx, f.event, sec)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list {
			cp := s
			m.seats[s.ID] = &cp
		}
	}
	contested := []string{"A-1-1-1", "A-1-1-2", "A-1-1-3", "A-1-1-4", "A-1-2-1", "A-1-2-2", "AB-1-1-1", "AB-1-1-2", "AB-1-1-3", "AB-1-1-4", "AB-1-1-5", "AB-1-1-6"}
	r := rand.New(rand.NewPCG(42, 1))
	now := T0
	var ids []string
	pick := func() string {
		if len(ids) == 0 {
			return "none"
		}
		return ids[r.IntN(len(ids))]
	}
	for step := range 400 {
		var desc string
		var got, want error
		switch op := r.IntN(10); {
		case op == 0:
			now = now.Add(time.Duration(r.IntN(240)) * time.Second)
			continue
		case op == 1 || len(ids) == 0:
			user := fmt.Sprintf("u%d", r.IntN(6))
			sess := seats.Session{ID: fmt.Sprintf("S%03d", step), EventID: f.event, UserID: user, TokenID: fmt.Sprintf("t%d", r.IntN(500)),
				State: seats.StateReservation, Limit: 4, CreatedAt: now, ExpiresAt: now.Add(10 * time.Minute), Seats: []string{}}
			desc = "open " + sess.ID + " for " + user
			got, want = f.store.CreateSession(f.ctx, sess, now, nil), m.open(sess, now)
			if want == nil {
				ids = append(ids, sess.ID)
			}
		case op <= 4:
			id := pick()
			n := 1 + r.IntN(3)
			perm := r.Perm(len(contested))[:n]
			var want2 []string
			for _, p := range perm {
				want2 = append(want2, contested[p])
			}
			h := seats.Hold{Session: id, Seats: want2, Now: now}
			desc = fmt.Sprintf("hold %s %v", id, want2)
			_, got = f.store.Hold(f.ctx, h)
			want = m.apply(id, want2, func(s *seats.Session, l []*seats.Seat) error { return seats.ApplyHold(s, l, h) })
		case op == 5:
			id, seat := pick(), contested[r.IntN(len(contested))]
			desc = "release " + id + " " + seat
			r := seats.Release{Session: id, Seat: seat, Now: now}
			_, got = f.store.Release(f.ctx, r)
			want = m.apply(id, []string{seat}, func(s *seats.Session, l []*seats.Seat) error { return seats.ApplyRelease(s, l[0], r) })
		case op == 6:
			id := pick()
			until := now.Add(5 * time.Minute)
			desc = "checkout " + id
			_, got = f.store.Checkout(f.ctx, id, now, until, nil)
			want = m.apply(id, nil, func(s *seats.Session, l []*seats.Seat) error { return seats.ApplyCheckout(s, l, now, until) })
		case op <= 8:
			id := pick()
			desc = "confirm " + id
			_, got = f.store.Confirm(f.ctx, id, "R"+id, "pay", now, nil)
			want = m.apply(id, nil, func(s *seats.Session, l []*seats.Seat) error { return seats.ApplyConfirm(s, l, "R"+id, "pay", now) })
		default:
			id := pick()
			desc = "cancel " + id
			_, got = f.store.Cancel(f.ctx, id, now, nil)
			want = m.apply(id, nil, func(s *seats.Session, l []*seats.Seat) error { return seats.ApplyCancel(s, l, now) })
		}
		if outcome(got) != outcome(want) {
			t.Fatalf("step %d (%s): store says %q, model %q", step, desc, outcome(got), outcome(want))
		}
		checkInvariants(t, f, m, now, step, desc)
	}
}

func checkInvariants(t *testing.T, f *fixture, m *model, now time.Time, step int, desc string) {
	t.Helper()
	stored := map[string]seats.Seat{}
	for _, sec := range []string{"A", "AB"} {
		list, err := f.store.SectionSeats(f.ctx, f.event, sec)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list {
			stored[s.ID] = s
		}
		_, counts, err := f.svc.EventCounts(f.ctx, f.event)
		if err != nil || counts[sec] != seats.Count(list, f.svc.Now()) {
			t.Fatalf("step %d: counts of %s disagree with its seats", step, sec)
		}
	}
	for id, want := range m.seats {
		got := stored[id]
		if got.StatusAt(now) != want.StatusAt(now) || got.Reservation != want.Reservation || (got.StatusAt(now) == seats.Locked && got.Session != want.Session) {
			t.Fatalf("step %d (%s): seat %s is %s/%s/%s in the store, %s/%s/%s in the model", step, desc, id,
				got.StatusAt(now), got.Session, got.Reservation, want.StatusAt(now), want.Session, want.Reservation)
		}
		if got.Status == seats.Reserved {
			owner, ok := m.sessions[got.Session]
			if !ok || owner.State != seats.StateFinalised || owner.Reservation != got.Reservation || !slices.Contains(owner.Seats, id) {
				t.Fatalf("step %d: seat %s reserved without a finalised session owning it", step, id)
			}
		}
		if got.StatusAt(now) == seats.Locked {
			owner := m.sessions[got.Session]
			if owner == nil || !slices.Contains(owner.Seats, id) {
				t.Fatalf("step %d: seat %s locked by %s, which does not hold it", step, id, got.Session)
			}
		}
	}
	for id, want := range m.sessions {
		got, err := f.store.Session(f.ctx, id)
		if err != nil || got.State != want.State || len(got.Seats) != len(want.Seats) {
			t.Fatalf("step %d (%s): session %s is %s %v in the store, %s %v in the model (%v)", step, desc, id, got.State, got.Seats, want.State, want.Seats, err)
		}
		if len(got.Seats) > got.Limit {
			t.Fatalf("step %d: session %s holds %d seats, limit %d", step, id, len(got.Seats), got.Limit)
		}
	}
}
