package boltstore

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/fairgate/fairgate/seats"
)

// TestEncodeMatchesJSON: the hand-written encodings are json.Marshal's
// output, byte for byte, and fail where it fails.
func TestEncodeMatchesJSON(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 14, 0, 0, 123456789, time.UTC)
	odd := "a<b>&\"c\\d\x01\u2028é\xff"
	seatCases := []seats.Seat{
		{},
		{EventID: "ev", ID: "A-1-1-1", Section: "A", Block: "1", Row: "1", Number: 1, Price: 5000, Status: seats.Available},
		{ID: "A-1-1-2", Section: "A", Block: "1", Row: "1", Number: -2, Category: "vip", Price: -1, Status: seats.Locked, Session: "Sabc", ExpiresAt: t0},
		{ID: odd, Section: odd, Block: odd, Row: odd, Category: odd, Status: seats.Availability(odd), Session: odd, Reservation: odd, ExpiresAt: t0.In(time.FixedZone("x", -5*3600-1800))},
		{ID: "A", Status: seats.Reserved, Reservation: "Rabc", ExpiresAt: time.Date(0, 1, 1, 0, 0, 0, 1, time.UTC)},
	}
	for i, s := range seatCases {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeSeat(&s)
		if err != nil || string(got) != string(want) {
			t.Errorf("seat %d: %s %v\njson.Marshal %s", i, got, err, want)
		}
	}
	sessCases := []seats.Session{
		{},
		{ID: "S1", EventID: "ev", UserID: "u", State: seats.StateReservation, Limit: 6, Seats: []string{}, CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)},
		{ID: "S2", EventID: "ev", UserID: "u", TokenID: "w", State: seats.StateFinalised, Limit: 4, Seats: []string{"A-1-1-1", "A-1-1-2"},
			CreatedAt: t0, ExpiresAt: t0, Reservation: "R2", PaymentRef: "pay", FinalisedAt: t0.Add(time.Second), CheckoutUntil: t0.Add(time.Hour)},
		{ID: odd, EventID: odd, UserID: odd, TokenID: odd, State: seats.SessionState(odd), Seats: []string{odd, ""}, PaymentRef: odd, Reservation: odd,
			CreatedAt: t0.In(time.FixedZone("y", 9*3600)), ExpiresAt: t0.Local()},
	}
	for i, s := range sessCases {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeSession(&s)
		if err != nil || string(got) != string(want) {
			t.Errorf("session %d: %s %v\njson.Marshal %s", i, got, err, want)
		}
	}
	// Times RFC 3339 cannot write fail as in json.Marshal.
	bad := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := json.Marshal(seats.Seat{ExpiresAt: bad}); err == nil {
		t.Fatal("json.Marshal wrote year 10000")
	}
	if _, err := encodeSeat(&seats.Seat{ExpiresAt: bad}); err == nil {
		t.Error("encodeSeat wrote year 10000")
	}
	if _, err := encodeSession(&seats.Session{CreatedAt: bad}); err == nil {
		t.Error("encodeSession wrote year 10000")
	}
}

// FuzzEncodeMatchesJSON holds the encodings to json.Marshal for any
// strings and times.
func FuzzEncodeMatchesJSON(f *testing.F) {
	f.Add("A-1-1-1", "Sabc", "vip", int64(1764000000123456789), 3600)
	f.Add("<&>", "\"\\", "\x00\xff", int64(0), -45000)
	f.Fuzz(func(t *testing.T, a, b, c string, nanos int64, offset int) {
		at := time.Unix(0, nanos).In(time.FixedZone("z", offset%(48*3600)))
		seat := seats.Seat{ID: a, Section: b, Block: c, Row: a, Number: int(nanos % 1000), Category: c, Price: nanos, Status: seats.Availability(b), Session: c, ExpiresAt: at, Reservation: a}
		sess := seats.Session{ID: a, EventID: b, UserID: c, TokenID: a, State: seats.SessionState(c), Limit: offset, Seats: []string{a, b, c}, CreatedAt: at, ExpiresAt: at, Reservation: b, PaymentRef: c, FinalisedAt: at, CheckoutUntil: at}
		for name, pair := range map[string][2]func() ([]byte, error){
			"seat":    {func() ([]byte, error) { return json.Marshal(seat) }, func() ([]byte, error) { return encodeSeat(&seat) }},
			"session": {func() ([]byte, error) { return json.Marshal(sess) }, func() ([]byte, error) { return encodeSession(&sess) }},
		} {
			want, werr := pair[0]()
			got, gerr := pair[1]()
			if (werr == nil) != (gerr == nil) || string(got) != string(want) {
				t.Fatalf("%s: %s %v\njson.Marshal %s %v", name, got, gerr, want, werr)
			}
		}
	})
}
