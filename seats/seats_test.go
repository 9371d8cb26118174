package seats

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestStadium(t *testing.T) {
	ev := Stadium("final", "Final", time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC))
	if err := Validate(ev); err != nil {
		t.Fatal(err)
	}
	if list := expand(ev); len(list) != 20000 || len(ev.Sections) != 32 {
		t.Fatalf("%d seats in %d sections", len(list), len(ev.Sections))
	}
}

func TestBestTogether(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	row := func(taken ...int) []Seat {
		var out []Seat
		for n := 1; n <= 8; n++ {
			s := Seat{ID: SeatID("A", "1", "1", n), Block: "1", Row: "1", Number: n, Status: Available}
			for _, t := range taken {
				if t == n {
					s.Status = Reserved
				}
			}
			out = append(out, s)
		}
		return out
	}
	tests := []struct {
		name  string
		seats []Seat
		count int
		want  []string
	}{
		{"empty row", row(), 2, []string{"A-1-1-1", "A-1-1-2"}},
		{"exact fit first", row(3), 2, []string{"A-1-1-1", "A-1-1-2"}},
		{"no lone seat", row(4), 2, []string{"A-1-1-5", "A-1-1-6"}}, // 1-3 would leave one
		{"none fits", row(2, 4, 6, 8), 2, nil},
		{"whole row", row(), 8, []string{"A-1-1-1", "A-1-1-2", "A-1-1-3", "A-1-1-4", "A-1-1-5", "A-1-1-6", "A-1-1-7", "A-1-1-8"}},
		{"seven of eight leaves one", row(), 7, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BestTogether(tt.seats, tt.count, now, nil)
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("got %v, want %v", got, tt.want)
				}
			}
		})
	}
	// An expired lock counts as free.
	seats := row()
	seats[0].Status, seats[0].ExpiresAt = Locked, now.Add(-time.Second)
	if got := BestTogether(seats, 2, now, nil); len(got) != 2 || got[0] != "A-1-1-1" {
		t.Fatalf("expired lock: %v", got)
	}
}

// TestDecidedAfterDeadline: a write whose seats lapsed because the session's
// deadline passed while it was decided is 410.
func TestDecidedAfterDeadline(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	clock := now
	store := &notHeldStore{sess: Session{ID: "S1", UserID: "u", State: StateReservation, ExpiresAt: now.Add(time.Second)}}
	svc := NewService(store, func() time.Time { return clock })
	if _, err := svc.ReleaseSeat(context.Background(), "S1", "u", "A-1-1-1", now, nil); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("before the deadline: %v", err)
	}
	clock = now.Add(2 * time.Second)
	if _, err := svc.ReleaseSeat(context.Background(), "S1", "u", "A-1-1-1", now, nil); !errors.Is(err, ErrExpired) {
		t.Fatalf("decided after the deadline: %v", err)
	}
}

// notHeldStore refuses every release as not held.
type notHeldStore struct {
	Store
	sess Session
}

func (s *notHeldStore) Session(context.Context, string) (Session, error) { return s.sess, nil }
func (s *notHeldStore) Release(context.Context, Release) (Session, error) {
	return Session{}, ErrNotHeld
}

// TestEncodeRecord: the record encoded around an encoded session reads
// back as the KeyRecord of that session, and is byte for byte what
// json.Marshal makes of that KeyRecord.
func TestEncodeRecord(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 123456789, time.FixedZone("x", 3600))
	k := &Idempotency{Key: "k", Fingerprint: "fp \"<&>\u2028 é", Status: 201}
	sess := Session{ID: "S1", EventID: "ev", UserID: "u", State: StateReservation, Limit: 6, Seats: []string{"A-1-1-1"}, CreatedAt: now.UTC(), ExpiresAt: now.Add(time.Minute).UTC()}
	raw, err := json.Marshal(sess)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := k.EncodeRecord(raw, now)
	if err != nil {
		t.Fatal(err)
	}
	var got KeyRecord
	if err := json.Unmarshal(enc, &got); err != nil {
		t.Fatal(err)
	}
	want := KeyRecord{ClaimedAt: now.UTC(), Fingerprint: k.Fingerprint, Status: 201, Session: &sess}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %+v\nwant    %+v", got, want)
	}
	std, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(enc) != string(std) {
		t.Fatalf("encoded %s\njson.Marshal %s", enc, std)
	}
	if _, err := k.EncodeRecord(raw, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)); err == nil {
		t.Fatal("a claimed_at past year 9999 encoded")
	}
}
