package seats

import (
	"context"
	"time"
)

// Store keeps events, seats and sessions. Every method that changes state
// is one atomic transaction that applies the matching Apply* rule: a store
// never sells a seat twice, whatever the concurrency. One conformance suite
// (package storetest) holds every store to the same behaviour.
type Store interface {
	// PutEvent stores a new event and its seats; ErrExists if the id is taken.
	PutEvent(ctx context.Context, ev Event, seats []Seat) error
	// Event returns an event; ErrNotFound if there is none.
	Event(ctx context.Context, id string) (Event, error)
	// SectionSeats returns a section's seats as stored (apply StatusAt).
	SectionSeats(ctx context.Context, event, section string) ([]Seat, error)

	// CreateSession stores a new session: ErrSessionExists (with the live
	// session's id in *SessionExistsError) if the user has a live session
	// for the event, ErrTokenUsed if its waiting token opened one before.
	CreateSession(ctx context.Context, s Session, now time.Time) error
	// Session returns a session; ErrNotFound if there is none.
	Session(ctx context.Context, id string) (Session, error)

	// Hold applies ApplyHold atomically.
	Hold(ctx context.Context, h Hold) (Session, error)
	// Release applies ApplyRelease atomically.
	Release(ctx context.Context, session, seat string, now time.Time) (Session, error)
	// Checkout applies ApplyCheckout atomically.
	Checkout(ctx context.Context, session string, now, until time.Time, token string) (Session, error)
	// Confirm applies ApplyConfirm atomically.
	Confirm(ctx context.Context, session, reservation, paymentRef string, now time.Time, token string) (Session, error)
	// Cancel applies ApplyCancel atomically.
	Cancel(ctx context.Context, session string, now time.Time, token string) (Session, error)

	// ClaimKey records an idempotency key as in progress, or returns the
	// record already there (claimed false).
	ClaimKey(ctx context.Context, key string, now time.Time) (rec KeyRecord, claimed bool, err error)
	// CompleteKey stores the answer to an idempotent request.
	CompleteKey(ctx context.Context, key string, rec KeyRecord) error

	Close() error
}

// SessionExistsError is ErrSessionExists naming the live session.
type SessionExistsError struct{ Session string }

func (e *SessionExistsError) Error() string { return ErrSessionExists.Error() + ": " + e.Session }

// Unwrap makes errors.Is(err, ErrSessionExists) true.
func (e *SessionExistsError) Unwrap() error { return ErrSessionExists }

// KeyRecord is the stored answer to a request with an Idempotency-Key. A
// record without Status is in progress; ClaimedAt is the request's clock, so
// a retry computes exactly the same writes (and the same DynamoDB
// ClientRequestToken).
type KeyRecord struct {
	ClaimedAt   time.Time `json:"claimed_at"`
	Fingerprint string    `json:"fingerprint"`
	Status      int       `json:"status,omitempty"`
	Body        []byte    `json:"body,omitempty"`
}

// Counts are a section's seats by availability.
type Counts struct {
	Available int `json:"available"`
	Locked    int `json:"locked"`
	Reserved  int `json:"reserved"`
	Total     int `json:"total"`
}
