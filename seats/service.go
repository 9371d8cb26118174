package seats

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"
)

// MaxSeatsPerHold caps one hold. DynamoDB's TransactWriteItems takes at
// most 100 actions, one of which is the session: 99 seats is the hard limit;
// 20 leaves room and is more than any sale lets one person hold.
const MaxSeatsPerHold = 20

// Service is the seat service's behaviour over a Store.
type Service struct {
	store Store
	now   func() time.Time
	// events caches events by id: an event never changes once stored (a
	// store makes it visible whole, and nothing updates or deletes it), and
	// it is the whole venue's layout, which opening a session or a
	// checkout would otherwise read and decode for one or two fields.
	events sync.Map // string → Event
}

// NewService returns a service; now is its clock.
func NewService(store Store, now func() time.Time) *Service {
	return &Service{store: store, now: now}
}

// event returns an event, from the cache once read. Only found events
// are cached: one not yet imported is looked up again.
func (s *Service) event(ctx context.Context, id string) (Event, error) {
	if ev, ok := s.events.Load(id); ok {
		return ev.(Event), nil
	}
	ev, err := s.store.Event(ctx, id)
	if err != nil {
		return ev, err
	}
	s.events.Store(id, ev)
	return ev, nil
}

// Now is the service's clock.
func (s *Service) Now() time.Time { return s.now() }

// Store is the service's store.
func (s *Service) Store() Store { return s.store }

// CreateEvent validates an event (Validate), expands its seats and stores
// it, its sections without their rows (Event.Header) beside the seats.
func (s *Service) CreateEvent(ctx context.Context, ev Event) (Event, error) {
	if err := Validate(ev); err != nil {
		return ev, err
	}
	if ev.MaxSeats == 0 {
		ev.MaxSeats = 6
	}
	if err := s.store.PutEvent(ctx, ev.Header(), expand(ev)); err != nil {
		return ev, err
	}
	return ev, nil
}

// EventCounts is an event with its seat counts per section, at now.
func (s *Service) EventCounts(ctx context.Context, id string) (Event, map[string]Counts, error) {
	ev, err := s.event(ctx, id)
	if err != nil {
		return ev, nil, err
	}
	now := s.now()
	counts := make(map[string]Counts, len(ev.Sections))
	for _, sec := range ev.Sections {
		seats, err := s.store.SectionSeats(ctx, id, sec.ID)
		if err != nil {
			return ev, nil, err
		}
		counts[sec.ID] = Count(seats, now)
	}
	return ev, counts, nil
}

// Count tallies seats by their availability at now.
func Count(seats []Seat, now time.Time) Counts {
	var c Counts
	for _, st := range seats {
		switch st.StatusAt(now) {
		case Available:
			c.Available++
		case Locked:
			c.Locked++
		case Reserved:
			c.Reserved++
		}
		if st.Status != NotForSale {
			c.Total++
		}
	}
	return c
}

// SectionMap is one section's seats at now.
func (s *Service) SectionMap(ctx context.Context, event, section string) (Section, []Seat, error) {
	ev, err := s.event(ctx, event)
	if err != nil {
		return Section{}, nil, err
	}
	i := slices.IndexFunc(ev.Sections, func(sec Section) bool { return sec.ID == section })
	if i < 0 {
		return Section{}, nil, fmt.Errorf("section %s: %w", section, ErrNotFound)
	}
	seats, err := s.store.SectionSeats(ctx, event, section)
	if err != nil {
		return Section{}, nil, err
	}
	now := s.now()
	for i := range seats {
		seats[i].Status = seats[i].StatusAt(now)
		if seats[i].Status != Locked && seats[i].Status != Reserved {
			seats[i].Session, seats[i].ExpiresAt = "", time.Time{}
		}
		seats[i].Reservation = ""
	}
	return ev.Sections[i], seats, nil
}

// OpenSession opens a reservation session for an admitted visitor.
func (s *Service) OpenSession(ctx context.Context, event, user, tokenID string, now time.Time, key *Idempotency) (Session, error) {
	ev, err := s.event(ctx, event)
	if err != nil {
		return Session{}, err
	}
	sess := Session{
		ID: newID("S"), EventID: event, UserID: user, TokenID: tokenID, State: StateReservation,
		Limit: ev.MaxSeats, CreatedAt: now, ExpiresAt: now.Add(ev.HoldWindow.Or(10 * time.Minute)),
		Seats: []string{},
	}
	if err := s.store.CreateSession(ctx, sess, now, key); err != nil {
		return Session{}, err
	}
	return sess, nil
}

// Session returns a session if it belongs to user.
func (s *Service) Session(ctx context.Context, id, user string) (Session, error) {
	sess, err := s.store.Session(ctx, id)
	if err != nil {
		return sess, err
	}
	if user == "" || owned(&sess, user) != nil { // an unnamed caller owns nothing
		return Session{}, ErrForbidden
	}
	if sess.State = sess.StateAt(s.now()); sess.State == StateExpired {
		sess.Seats = []string{} // its locks have lapsed: nothing is held
	}
	return sess, nil
}

// HoldSeats holds the given seats, all or nothing.
// The store checks the session is user's inside the hold's transaction.
func (s *Service) HoldSeats(ctx context.Context, id, user string, seatIDs []string, now time.Time, key *Idempotency) (Session, error) {
	if len(seatIDs) == 0 || len(seatIDs) > MaxSeatsPerHold {
		return Session{}, fmt.Errorf("%w: hold 1 to %d seats", ErrInvalid, MaxSeatsPerHold)
	}
	ids := slices.Clone(seatIDs)
	slices.Sort(ids)
	if len(slices.Compact(ids)) != len(seatIDs) {
		return Session{}, fmt.Errorf("%w: a seat is named twice", ErrInvalid)
	}
	return s.decided(ctx, id)(s.store.Hold(ctx, Hold{Session: id, User: user, Seats: seatIDs, Now: now, Key: key}))
}

// MaxBestSections caps the sections one best-available request may name
// (its reads are bounded by MaxBestScan whatever it names).
const MaxBestSections = 32

// dedupe drops repeated sections, keeping the first of each in order.
func dedupe(sections []string) []string {
	seen := make(map[string]bool, len(sections))
	out := sections[:0:0]
	for _, s := range sections {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// HoldBest holds count seats together in one row, trying sections in the
// given order and, after a lost race, the next candidates.
func (s *Service) HoldBest(ctx context.Context, id, user string, count int, sections []string, now time.Time, key *Idempotency) (Session, error) {
	sess, err := s.Session(ctx, id, user)
	if err != nil {
		return sess, err
	}
	if count < 1 || count > MaxSeatsPerHold {
		return sess, fmt.Errorf("%w: count must be 1 to %d", ErrInvalid, MaxSeatsPerHold)
	}
	sections = dedupe(sections)
	if len(sections) > MaxBestSections {
		return sess, fmt.Errorf("%w: best.sections names %d distinct sections, at most %d", ErrInvalid, len(sections), MaxBestSections)
	}
	if len(sections) == 0 {
		ev, err := s.event(ctx, sess.EventID)
		if err != nil {
			return sess, err
		}
		for _, sec := range ev.Sections {
			sections = append(sections, sec.ID)
		}
	}
	const maxTries = 8
	tries, budget := 0, MaxBestScan
	for _, section := range sections {
		found := false
		for row, err := range s.rows(ctx, sess.EventID, section, &budget) {
			switch {
			case errors.Is(err, errScanned):
				return sess, &TakenError{}
			case err != nil:
				return sess, err
			}
			found = true
			taken := map[string]bool{}
			for {
				cand := BestTogether(row, count, now, taken)
				if cand == nil {
					break
				}
				out, err := s.store.Hold(ctx, Hold{Session: id, User: user, Seats: cand, Now: now, Key: attemptKey(key, tries)})
				var te *TakenError
				if !errors.As(err, &te) {
					return out, err
				}
				for _, seat := range te.Seats {
					taken[seat] = true
				}
				if tries++; tries >= maxTries {
					return sess, err
				}
			}
		}
		if !found {
			return sess, fmt.Errorf("section %s: %w", section, ErrNotFound)
		}
	}
	return sess, &TakenError{}
}

// SeatPageSize is the most seats one read of a section takes (one
// DynamoDB query of about 100 KB, well under its 1 MB page).
const SeatPageSize = 500

// MaxBestScan bounds the seats one best-available request reads, over all
// its sections and tries: its cost stays bounded however large the event,
// and a venue whose first MaxBestScan seats in the order asked have no
// run that fits answers as taken (the buyer picks seats on the map, or
// names other sections).
const MaxBestScan = 20 * SeatPageSize

// errScanned ends a best-available search that read MaxBestScan seats.
var errScanned = errors.New("best available read its limit of seats")

// rows yields a section's seats a row at a time, read in pages of
// SeatPageSize while *budget lasts (each seat read costs one), then a
// last partial row, if any, and errScanned. The stores give a row's seats
// together (Store.SeatPage).
func (s *Service) rows(ctx context.Context, event, section string, budget *int) iter.Seq2[[]Seat, error] {
	return func(yield func([]Seat, error) bool) {
		var row []Seat
		for after := ""; ; {
			if *budget <= 0 {
				if len(row) == 0 || yield(row, nil) {
					yield(nil, errScanned)
				}
				return
			}
			page, next, err := s.store.SeatPage(ctx, event, section, after, min(SeatPageSize, *budget))
			if err != nil {
				yield(nil, err)
				return
			}
			*budget -= len(page)
			for _, st := range page {
				if len(row) > 0 && (row[0].Block != st.Block || row[0].Row != st.Row) {
					if !yield(row, nil) {
						return
					}
					row = nil
				}
				row = append(row, st)
			}
			if after = next; next == "" {
				break
			}
		}
		if len(row) > 0 {
			yield(row, nil)
		}
	}
}

// attemptKey marks an idempotent write as one try of its request, so
// tries on other candidates are distinct writes under the same key.
func attemptKey(key *Idempotency, attempt int) *Idempotency {
	if key == nil {
		return nil
	}
	k := *key
	k.Attempt = attempt
	return &k
}

// ReleaseSeat releases one held seat.
// The store checks the session is user's inside the release's transaction.
func (s *Service) ReleaseSeat(ctx context.Context, id, user, seat string, now time.Time, key *Idempotency) (Session, error) {
	return s.decided(ctx, id)(s.store.Release(ctx, Release{Session: id, User: user, Seat: seat, Now: now, Key: key}))
}

// Checkout freezes the holds and keeps them to CheckoutDeadline.
func (s *Service) Checkout(ctx context.Context, id, user string, now time.Time, key *Idempotency) (Session, error) {
	sess, err := s.Session(ctx, id, user)
	if err != nil {
		return sess, err
	}
	ev, err := s.event(ctx, sess.EventID)
	if err != nil {
		return sess, err
	}
	return s.decided(ctx, id)(s.store.Checkout(ctx, id, now, CheckoutDeadline(sess, now, ev.CheckoutWindow.Or(7*time.Minute)), key))
}

// CheckoutDeadline is when a checkout started at now ends: the later of
// the hold's own deadline and the checkout window, so checking out early
// never costs a buyer the minutes their hold still had.
func CheckoutDeadline(sess Session, now time.Time, window time.Duration) time.Time {
	return later(sess.ExpiresAt, now.Add(window))
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Confirm finalises a checkout and returns the session with its reservation id.
func (s *Service) Confirm(ctx context.Context, id, user, paymentRef string, now time.Time, key *Idempotency) (Session, error) {
	if paymentRef == "" || len(paymentRef) > 200 {
		return Session{}, fmt.Errorf("%w: payment_ref is required (at most 200 characters)", ErrInvalid)
	}
	if _, err := s.Session(ctx, id, user); err != nil {
		return Session{}, err
	}
	return s.decided(ctx, id)(s.store.Confirm(ctx, id, reservationID(id), paymentRef, now, key))
}

// Cancel cancels a session and releases its seats.
func (s *Service) Cancel(ctx context.Context, id, user string, now time.Time, key *Idempotency) (Session, error) {
	if _, err := s.Session(ctx, id, user); err != nil {
		return Session{}, err
	}
	return s.store.Cancel(ctx, id, now, key)
}

// decided returns a write's outcome, except that a write refused because
// its seats were no longer held, when the session's deadline has passed by
// the time it was decided, is ErrExpired (410): the deadline is the cause.
func (s *Service) decided(ctx context.Context, id string) func(Session, error) (Session, error) {
	return func(sess Session, err error) (Session, error) {
		if !errors.Is(err, ErrNotHeld) {
			return sess, err
		}
		if cur, rerr := s.store.Session(ctx, id); rerr == nil && cur.StateAt(s.now()) == StateExpired {
			return sess, fmt.Errorf("%w (decided after its deadline)", ErrExpired)
		}
		return sess, err
	}
}

// reservationID derives the reservation id from the session, so a retried
// confirm can never mint a second one.
func reservationID(session string) string { return "R" + strings.TrimPrefix(session, "S") }

func newID(prefix string) string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return prefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}
