package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fairgate/fairgate/internal/reply"
	"github.com/fairgate/fairgate/seats"
)

// TestWriteSession: a session's answer is, header for header and byte for
// byte, what reply.JSON writes for the session with its id again as
// "session", failures included.
func TestWriteSession(t *testing.T) {
	type view struct {
		seats.Session
		SessionID string `json:"session"`
	}
	t0 := time.Date(2026, 11, 23, 14, 0, 0, 123456789, time.UTC)
	odd := "a<b>&\"c\\d\x01\u2028é\xff"
	cases := map[string]seats.Session{
		"zero": {},
		"open": {ID: "S1", EventID: "ev", UserID: "u", State: seats.StateReservation, Limit: 6, Seats: []string{}, CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)},
		"finalised": {ID: "S2", EventID: "ev", UserID: "u", TokenID: "w", State: seats.StateFinalised, Limit: 4, Seats: []string{"A-1-1-1", "A-1-1-2"},
			CreatedAt: t0, ExpiresAt: t0, Reservation: "R2", PaymentRef: "pay", FinalisedAt: t0.Add(time.Second), CheckoutUntil: t0.Add(time.Hour)},
		"escaped": {ID: odd, EventID: odd, UserID: odd, TokenID: odd, State: seats.SessionState(odd), Seats: []string{odd, ""}, PaymentRef: odd,
			CreatedAt: t0.In(time.FixedZone("y", 9*3600)), ExpiresAt: t0.Local()},
		"unencodable": {ID: "S3", CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for name, sess := range cases {
		t.Run(name, func(t *testing.T) {
			want := httptest.NewRecorder()
			reply.JSON(want, http.StatusCreated, view{Session: sess, SessionID: sess.ID})
			got := httptest.NewRecorder()
			writeSession(got, http.StatusCreated, &sess)
			if got.Code != want.Code || got.Body.String() != want.Body.String() {
				t.Errorf("got %d %q\nwant %d %q", got.Code, got.Body, want.Code, want.Body)
			}
			for k := range want.Header() {
				if got.Header().Get(k) != want.Header().Get(k) {
					t.Errorf("header %s: got %q, want %q", k, got.Header().Get(k), want.Header().Get(k))
				}
			}
			if len(got.Header()) != len(want.Header()) {
				t.Errorf("headers: got %v, want %v", got.Header(), want.Header())
			}
		})
	}
}
