// Package seats is fairgate's seat-reservation domain: events and their
// seats, reservation sessions, and the rules that keep a seat from ever being
// sold twice. It knows nothing of HTTP or of how seats are stored: stores
// (package boltstore, package dynamostore) apply these rules atomically, and
// package httpapi serves them.
package seats

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fairgate/fairgate/internal/duration"
)

// Availability of a seat.
type Availability string

// Seat availabilities. A locked seat whose lock has expired is available
// on every path: nothing relies on a sweeper for correctness.
const (
	Available  Availability = "available"
	Locked     Availability = "locked"
	Reserved   Availability = "reserved"
	NotForSale Availability = "not_for_sale"
)

// Duration is a duration in JSON as "10m" or nanoseconds.
type Duration = duration.Duration

// Event is a sale: its sections, and the rules for its sessions.
type Event struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	StartsAt time.Time `json:"starts_at,omitzero"`
	Sections []Section `json:"sections"`
	// MaxSeats is the most seats one session may hold. Default 6.
	MaxSeats int `json:"max_seats_per_session,omitempty"`
	// HoldWindow is how long a session may pick seats. Default 10m.
	HoldWindow Duration `json:"hold_window,omitempty"`
	// CheckoutWindow is how long a checkout may take. Default 7m.
	CheckoutWindow Duration `json:"checkout_window,omitempty"`
}

// Section is a part of the venue, drawn on the overview map.
type Section struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Category string `json:"category,omitempty"`
	// Price in cents of seats that do not name their own.
	Price int64 `json:"price,omitempty"`
	// Hot sections get a shorter cache lifetime on their seat maps.
	Hot bool `json:"hot,omitempty"`
	// Shape places the section on the overview map: an SVG path.
	Shape  string  `json:"shape,omitempty"`
	Blocks []Block `json:"blocks"`
}

// Block is a group of rows within a section.
type Block struct {
	ID   string `json:"id"`
	Rows []Row  `json:"rows"`
}

// Row is a row of seats, numbered along it.
type Row struct {
	ID    string     `json:"id"`
	Seats []SeatSpec `json:"seats"`
}

// SeatSpec is a seat as an event import describes it.
type SeatSpec struct {
	Number     int    `json:"number"`
	Category   string `json:"category,omitempty"`
	Price      int64  `json:"price,omitempty"`
	NotForSale bool   `json:"not_for_sale,omitempty"`
}

// Seat is one seat of an event and its current state.
type Seat struct {
	EventID  string `json:"-"`
	ID       string `json:"id"`
	Section  string `json:"section"`
	Block    string `json:"block"`
	Row      string `json:"row"`
	Number   int    `json:"number"`
	Category string `json:"category,omitempty"`
	Price    int64  `json:"price"`
	// Status is as stored; use StatusAt for what it means now.
	Status Availability `json:"status"`
	// Session holds the lock or owns the reservation.
	Session string `json:"session,omitempty"`
	// ExpiresAt ends a lock.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// Reservation is set once the seat is sold.
	Reservation string `json:"reservation,omitempty"`
}

// StatusAt is the seat's availability at now: an expired lock is available.
func (s Seat) StatusAt(now time.Time) Availability {
	if s.Status == Locked && !now.Before(s.ExpiresAt) {
		return Available
	}
	return s.Status
}

// LockedBy reports whether session holds a live lock on the seat at now.
func (s Seat) LockedBy(session string, now time.Time) bool {
	return s.StatusAt(now) == Locked && s.Session == session
}

// SeatID names a seat: section, block, row and number.
func SeatID(section, block, row string, number int) string {
	return section + "-" + block + "-" + row + "-" + strconv.Itoa(number) // an import makes one per seat
}

// SessionState is where a reservation session is.
type SessionState string

// Session states: reservation → checkout → finalised, or cancelled, or expired.
const (
	StateReservation SessionState = "reservation"
	StateCheckout    SessionState = "checkout"
	StateFinalised   SessionState = "finalised"
	StateCancelled   SessionState = "cancelled"
	StateExpired     SessionState = "expired"
)

// Session is one admitted visitor's reservation session for one event.
type Session struct {
	ID      string `json:"id"`
	EventID string `json:"event"`
	UserID  string `json:"user"`
	// TokenID is the waiting token (the pass's wid) it was opened with.
	TokenID string       `json:"token_id,omitempty"`
	State   SessionState `json:"state"`
	Limit   int          `json:"limit"`
	// Seats are the seats held (or, once finalised, reserved).
	Seats     []string  `json:"seats"`
	CreatedAt time.Time `json:"created_at"`
	// ExpiresAt is the deadline of the current state.
	ExpiresAt     time.Time `json:"expires_at"`
	Reservation   string    `json:"reservation,omitempty"`
	PaymentRef    string    `json:"payment_ref,omitempty"`
	FinalisedAt   time.Time `json:"finalised_at,omitzero"`
	CheckoutUntil time.Time `json:"checkout_until,omitzero"`
}

// StateAt is the session's state at now: a reservation or checkout past
// its deadline has expired.
func (s Session) StateAt(now time.Time) SessionState {
	if (s.State == StateReservation || s.State == StateCheckout) && !now.Before(s.ExpiresAt) {
		return StateExpired
	}
	return s.State
}

// Live reports whether the session still counts as the user's one session
// for its event.
func (s Session) Live(now time.Time) bool {
	st := s.StateAt(now)
	return st == StateReservation || st == StateCheckout
}

// Errors of the domain; the API maps each to its status.
var (
	ErrNotFound      = errors.New("not found")
	ErrExists        = errors.New("already exists")
	ErrSessionExists = errors.New("a live session exists for this user and event")
	ErrTokenUsed     = errors.New("this waiting token already opened a session")
	ErrExpired       = errors.New("session expired")
	ErrState         = errors.New("not allowed in the session's state")
	ErrLimit         = errors.New("over the session's seat limit")
	ErrNotHeld       = errors.New("seat not held by this session")
	ErrInvalid       = errors.New("invalid request")
	ErrForbidden     = errors.New("not your session")
	// ErrKeyUsed means the write's Idempotency-Key already has a record
	// (an earlier try of the same request committed): nothing changed.
	ErrKeyUsed = errors.New("idempotency key already used")
	// ErrThrottled means the store asked to slow down; retry after a moment.
	ErrThrottled = errors.New("store is throttling; retry shortly")
	// ErrUnknownSeat is a seat the session's event does not have (404).
	ErrUnknownSeat = fmt.Errorf("unknown seat: %w", ErrNotFound)
)

// TakenError is a hold that failed because some seats were not available;
// Seats names them.
type TakenError struct{ Seats []string }

func (e *TakenError) Error() string { return "seats taken: " + strings.Join(e.Seats, ", ") }

// Hold is one all-or-nothing hold request.
type Hold struct {
	Session string
	// User, if set, is who asks: a session of anyone else is refused
	// (ErrForbidden) inside the hold's own transaction, so the hold needs
	// no read of the session before it.
	User  string
	Seats []string
	Now   time.Time
	// Key, if set, commits the request's idempotency record with the hold.
	Key *Idempotency
}

// ApplyHold is the rule of a hold, applied to a session and its seats
// (in the order of h.Seats) as read inside one transaction: the session is
// h.User's (if named), in reservation and not expired, and stays within its
// limit with the seats it does not hold yet (checked first: it depends on
// the session alone); every such seat exists and is available now. Seats
// the session already holds are kept as they are. On success it mutates
// session and seats; on failure it changes nothing.
func ApplyHold(sess *Session, seats []*Seat, h Hold) error {
	if err := owned(sess, h.User); err != nil {
		return err
	}
	if err := sessionOpen(sess, h.Now); err != nil {
		return err
	}
	var fresh []int
	for i, id := range h.Seats {
		if !slices.Contains(sess.Seats, id) {
			fresh = append(fresh, i)
		}
	}
	if len(sess.Seats)+len(fresh) > sess.Limit {
		return fmt.Errorf("%w: %d held, %d more asked, limit %d", ErrLimit, len(sess.Seats), len(fresh), sess.Limit)
	}
	var taken []string
	for _, i := range fresh {
		switch s := seats[i]; {
		case s == nil:
			return fmt.Errorf("%w: %s", ErrUnknownSeat, h.Seats[i])
		case s.StatusAt(h.Now) != Available:
			taken = append(taken, s.ID)
		}
	}
	if len(taken) > 0 {
		return &TakenError{Seats: taken}
	}
	for _, i := range fresh {
		s := seats[i]
		s.Status, s.Session, s.ExpiresAt, s.Reservation = Locked, sess.ID, sess.ExpiresAt, ""
		sess.Seats = append(sess.Seats, s.ID)
	}
	return nil
}

// Release is one release request.
type Release struct {
	Session string
	// User, if set, is who asks, checked as Hold.User is.
	User string
	Seat string
	Now  time.Time
	// Key, if set, commits the request's idempotency record with the release.
	Key *Idempotency
}

// ApplyRelease releases one held seat: the session is r.User's (if named)
// and open, and holds the seat.
func ApplyRelease(sess *Session, seat *Seat, r Release) error {
	if err := owned(sess, r.User); err != nil {
		return err
	}
	now := r.Now
	if err := sessionOpen(sess, now); err != nil {
		return err
	}
	if seat == nil || !seat.LockedBy(sess.ID, now) || !slices.Contains(sess.Seats, seat.ID) {
		return ErrNotHeld
	}
	releaseSeat(seat)
	sess.Seats = slices.DeleteFunc(sess.Seats, func(id string) bool { return id == seat.ID })
	return nil
}

// ApplyCheckout starts the checkout: holds are frozen and every lock is
// extended to the end of the checkout window.
func ApplyCheckout(sess *Session, seats []*Seat, now, until time.Time) error {
	if err := sessionOpen(sess, now); err != nil {
		return err
	}
	if len(sess.Seats) == 0 {
		return fmt.Errorf("%w: nothing held to check out", ErrState)
	}
	for _, s := range seats {
		if s == nil || !s.LockedBy(sess.ID, now) {
			return ErrNotHeld
		}
	}
	for _, s := range seats {
		s.ExpiresAt = until
	}
	sess.State, sess.ExpiresAt, sess.CheckoutUntil = StateCheckout, until, until
	return nil
}

// ApplyConfirm finalises a checkout: locked → reserved.
func ApplyConfirm(sess *Session, seats []*Seat, reservation, paymentRef string, now time.Time) error {
	switch sess.StateAt(now) {
	case StateCheckout:
	case StateExpired:
		return ErrExpired
	default:
		return fmt.Errorf("%w: confirm needs checkout first", ErrState)
	}
	for _, s := range seats {
		if s == nil || !s.LockedBy(sess.ID, now) {
			return ErrNotHeld
		}
	}
	for _, s := range seats {
		s.Status, s.ExpiresAt, s.Reservation = Reserved, time.Time{}, reservation
	}
	sess.State, sess.Reservation, sess.PaymentRef, sess.FinalisedAt = StateFinalised, reservation, paymentRef, now
	return nil
}

// ApplyCancel cancels a live session and releases what it holds.
func ApplyCancel(sess *Session, seats []*Seat, now time.Time) error {
	switch sess.StateAt(now) {
	case StateReservation, StateCheckout:
	case StateExpired:
		return ErrExpired
	default:
		return fmt.Errorf("%w: session is %s", ErrState, sess.State)
	}
	for _, s := range seats {
		if s != nil && s.Session == sess.ID && s.Status == Locked {
			releaseSeat(s)
		}
	}
	sess.State, sess.Seats = StateCancelled, nil
	return nil
}

// owned is the rule that a change is asked by the session's user; an empty
// user is not checked (the caller has).
func owned(sess *Session, user string) error {
	if user != "" && sess.UserID != user {
		return ErrForbidden
	}
	return nil
}

func releaseSeat(s *Seat) {
	s.Status, s.Session, s.ExpiresAt = Available, "", time.Time{}
}

func sessionOpen(sess *Session, now time.Time) error {
	switch sess.StateAt(now) {
	case StateReservation:
		return nil
	case StateExpired:
		return ErrExpired
	default:
		return fmt.Errorf("%w: session is %s", ErrState, sess.State)
	}
}
