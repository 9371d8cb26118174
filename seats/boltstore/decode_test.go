package boltstore

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/fairgate/fairgate/seats"
)

// decodeCases are stored values as encodeSeat and encodeSession write
// them, and forms only json.Unmarshal reads.
func decodeCases(t testing.TB) [][]byte {
	t0 := time.Date(2026, 11, 23, 14, 0, 0, 123456789, time.UTC)
	var out [][]byte
	for _, s := range []seats.Seat{
		{ID: "A-1-1-1", Section: "A", Block: "1", Row: "1", Number: 1, Price: 5000, Status: seats.Available},
		{ID: "A-1-1-2", Section: "A", Block: "1", Row: "1", Number: -2, Category: "vip", Price: -1, Status: seats.Locked, Session: "Sabc", ExpiresAt: t0.In(time.FixedZone("x", -5*3600-1800))},
		{ID: "A<&>", Section: "é", Status: seats.Reserved, Reservation: "R\"1"},
	} {
		b, err := encodeSeat(&s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	for _, s := range []seats.Session{
		{ID: "S1", EventID: "ev", UserID: "u", State: seats.StateReservation, Limit: 6, Seats: []string{}, CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)},
		{ID: "S2", EventID: "ev", UserID: "u", TokenID: "w", State: seats.StateFinalised, Limit: 4, Seats: []string{"A-1-1-1", "A-1-1-2"},
			CreatedAt: t0.Local(), ExpiresAt: t0, Reservation: "R2", PaymentRef: "pay", FinalisedAt: t0.Add(time.Second), CheckoutUntil: t0.Add(time.Hour)},
		{ID: "S3", Seats: nil, UserID: "\x01"},
	} {
		b, err := encodeSession(&s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	for _, s := range []string{
		``, `{}`, `null`, `{"id":"a"}x`, `{ "id":"a"}`, `{"ID":"a"}`, `{"id":null}`, `{"number":01}`, `{"number":-01}`, `{"number":-0}`,
		`{"number":1.5}`, `{"number":1e3}`, `{"number":-}`, `{"price":99999999999999999999}`, `{"limit":3,"limit":4}`, `{"seats":null}`,
		`{"seats":[]}`, `{"seats":["a",]}`, `{"seats":["a","b"]}`, `{"expires_at":"2026-11-23T14:00:00Z"}`, `{"expires_at":"2026-11-23T24:00:00Z"}`,
		`{"expires_at":"2026-11-23 14:00:00Z"}`, `{"expires_at":null}`, `{"other":1,"id":"a"}`, `{"id":"a\u0041"}`, `{"id":"a"`, `{"id":"a",}`,
		`{"status":"locked","session":"S"}`, `{"created_at":"0000-01-01T00:00:00+23:59"}`,
	} {
		out = append(out, []byte(s))
	}
	return out
}

// TestDecodeMatchesJSON: decodeSeat and decodeSession read what
// json.Unmarshal reads, and fail where it fails.
func TestDecodeMatchesJSON(t *testing.T) {
	for _, raw := range decodeCases(t) {
		checkDecode(t, raw)
	}
}

func checkDecode(t *testing.T, raw []byte) {
	t.Helper()
	var wantSeat, gotSeat seats.Seat
	werr, gerr := json.Unmarshal(raw, &wantSeat), decodeSeat(raw, &gotSeat)
	if (werr == nil) != (gerr == nil) || werr == nil && !reflect.DeepEqual(gotSeat, wantSeat) {
		t.Errorf("seat from %q: %+v %v\njson.Unmarshal %+v %v", raw, gotSeat, gerr, wantSeat, werr)
	}
	var wantSess, gotSess seats.Session
	werr, gerr = json.Unmarshal(raw, &wantSess), decodeSession(raw, &gotSess)
	if (werr == nil) != (gerr == nil) || werr == nil && !reflect.DeepEqual(gotSess, wantSess) {
		t.Errorf("session from %q: %+v %v\njson.Unmarshal %+v %v", raw, gotSess, gerr, wantSess, werr)
	}
}

// FuzzDecodeMatchesJSON holds the readers to json.Unmarshal for any bytes
// (a corrupt file's too).
func FuzzDecodeMatchesJSON(f *testing.F) {
	for _, raw := range decodeCases(f) {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkDecode(t, raw) })
}
