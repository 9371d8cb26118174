package seats

import (
	"context"
	"fmt"
	"strconv"
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
	// SeatPage returns at most limit of a section's seats as stored (at
	// most SeatPageSize; a limit under 1 means SeatPageSize), in the order
	// of SectionSeats (a row's seats together), from just after the
	// cursor after ("" for the first page), and the cursor of the next
	// page ("" when there is none; a page may be short, or even empty,
	// and still have one). A page is one bounded read however large the
	// event.
	SeatPage(ctx context.Context, event, section, after string, limit int) (page []Seat, next string, err error)

	// CreateSession stores a new session: ErrSessionExists (with the live
	// session's id in *SessionExistsError) if the user has a live session
	// for the event, ErrTokenUsed if its waiting token opened one before.
	CreateSession(ctx context.Context, s Session, now time.Time, key *Idempotency) error
	// Session returns a session; ErrNotFound if there is none.
	Session(ctx context.Context, id string) (Session, error)

	// Hold applies ApplyHold atomically.
	Hold(ctx context.Context, h Hold) (Session, error)
	// Release applies ApplyRelease atomically.
	Release(ctx context.Context, r Release) (Session, error)
	// Checkout applies ApplyCheckout atomically.
	Checkout(ctx context.Context, session string, now, until time.Time, key *Idempotency) (Session, error)
	// Confirm applies ApplyConfirm atomically.
	Confirm(ctx context.Context, session, reservation, paymentRef string, now time.Time, key *Idempotency) (Session, error)
	// Cancel applies ApplyCancel atomically.
	Cancel(ctx context.Context, session string, now time.Time, key *Idempotency) (Session, error)

	// Key returns the record of an idempotency key (found false if none).
	Key(ctx context.Context, key string) (rec KeyRecord, found bool, err error)
	// PutKey records the answer to a request that changed nothing (a
	// refusal), unless the key has a record already (then ErrKeyUsed).
	PutKey(ctx context.Context, key string, rec KeyRecord) error

	Close() error
}

// SessionExistsError is ErrSessionExists naming the live session.
type SessionExistsError struct{ Session string }

func (e *SessionExistsError) Error() string { return ErrSessionExists.Error() + ": " + e.Session }

// Unwrap makes errors.Is(err, ErrSessionExists) true.
func (e *SessionExistsError) Unwrap() error { return ErrSessionExists }

// Idempotency ties a write to its Idempotency-Key. A store commits the
// key's record (the resulting session, Status, Fingerprint) in the same
// transaction as the change, so a crash or a timeout leaves either both or
// neither; a key that already has a record makes the write fail with
// ErrKeyUsed and change nothing, and the caller replays the record.
type Idempotency struct {
	// Key is the scoped key; DynamoDB derives ClientRequestToken from it.
	Key         string
	Fingerprint string
	// Status is the answer's status when the write succeeds.
	Status int
	// Attempt tells apart the tries of one request (best available tries
	// other seats after a lost race): each is its own write.
	Attempt int
}

// EncodeRecord is the JSON of the key's record (a KeyRecord) for a write
// that produced, at now, the session whose JSON is sess: a store that keeps
// the session as JSON encodes it once per write, for its own item and
// inside the record. The record is assembled around sess as it is, without
// the reflection and the re-validation of sess that json.Marshal of a
// json.RawMessage costs; sess must be valid, compact JSON (json.Marshal's).
// The bytes are json.Marshal's of the KeyRecord (TestEncodeRecord).
func (k *Idempotency) EncodeRecord(sess []byte, now time.Time) ([]byte, error) {
	b, err := k.AppendRecordHead(make([]byte, 0, recordHeadSize+len(sess)+1), now)
	if err != nil {
		return nil, err
	}
	return CloseRecord(b, sess), nil
}

// recordHeadSize is about the length of a record's head.
const recordHeadSize = len(`{"claimed_at":"2006-01-02T15:04:05.999999999Z","fingerprint":"","status":000,"session":`) + 32

// AppendRecordHead appends the start of EncodeRecord's record, all of it
// but the session, which CloseRecord appends: a store may build the head
// before the write and finish it once the session is known.
func (k *Idempotency) AppendRecordHead(b []byte, now time.Time) ([]byte, error) {
	b, err := appendJSONTime(append(b, `{"claimed_at":`...), now.UTC())
	if err != nil {
		return nil, fmt.Errorf("encoding claimed_at: %w", err)
	}
	b = AppendJSONString(append(b, `,"fingerprint":`...), k.Fingerprint)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(k.Status), 10)
	return append(b, `,"session":`...), nil
}

// CloseRecord appends the session's JSON and the record's end to a head
// from AppendRecordHead.
func CloseRecord(head, sess []byte) []byte {
	return append(append(head, sess...), '}')
}

// KeyRecord is the stored answer to a request with an Idempotency-Key:
// the session a write produced, or the body of a refusal. Only final
// answers are stored: never a 5xx or a 429.
type KeyRecord struct {
	ClaimedAt   time.Time `json:"claimed_at"`
	Fingerprint string    `json:"fingerprint"`
	Status      int       `json:"status"`
	Session     *Session  `json:"session,omitempty"`
	Body        []byte    `json:"body,omitempty"`
}

// KeyTTL is how long an idempotency record is kept: a client retries
// within minutes, and a day covers any sane retry policy.
const KeyTTL = 24 * time.Hour

// Counts are a section's seats by availability.
type Counts struct {
	Available int `json:"available"`
	Locked    int `json:"locked"`
	Reserved  int `json:"reserved"`
	Total     int `json:"total"`
}
