package httpapi

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairgate/fairgate/internal/dynamotest"
	"github.com/fairgate/fairgate/seats"
	"github.com/fairgate/fairgate/seats/boltstore"
	"github.com/fairgate/fairgate/seats/dynamostore"
	"github.com/fairgate/fairgate/seats/storetest"
)

// TestStadiumThroughTheAPI takes a storetest.StadiumSize event (30,000
// seats, 200,000 with FAIRGATE_STADIUM=1) through the API on each store:
// import, the whole map and a section's, a hold, best available, checkout
// and confirm.
func TestStadiumThroughTheAPI(t *testing.T) {
	stores := []struct {
		name string
		open func(t *testing.T) seats.Store
	}{
		{"bbolt", func(t *testing.T) seats.Store {
			s, err := boltstore.Open(filepath.Join(t.TempDir(), "seats.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
		{"DynamoDB", func(t *testing.T) seats.Store {
			n := rand.Int64()
			s := dynamostore.New(dynamotest.Client(t), dynamostore.Tables{Seats: fmt.Sprintf("seats_%d", n), Reservations: fmt.Sprintf("reservations_%d", n)})
			if err := s.CreateTables(context.Background()); err != nil {
				t.Fatal(err)
			}
			return s
		}},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) { stadiumThroughTheAPI(t, st.open(t)) })
	}
}

func stadiumThroughTheAPI(t *testing.T, store seats.Store) {
	size := storetest.StadiumSize()
	start := time.Now()
	e := newEnvOn(t, store, storetest.Stadium("stadium", size))
	t.Logf("imported %d seats through the API in %v", size, time.Since(start).Round(time.Millisecond))
	last := fmt.Sprintf("S%03d", size/2000)
	alice, sa := e.visitor("alice")
	tests := []struct {
		name, method, path, body string
		status                   int
		contains                 string
	}{
		{"the whole map", "GET", "/api/events/stadium", "", 200, `"id":"` + last + `","name":"` + last + `","price":5000,"counts":{"available":2000,"locked":0,"reserved":0,"total":2000}`},
		{"a section's map", "GET", "/api/events/stadium/sections/" + last, "", 200, `"id":"` + last + `-1-25-80"`},
		{"hold", "POST", "/api/sessions/" + sa + "/holds", `{"seats":["S007-1-01-1","S007-1-01-2"]}`, 200, `"S007-1-01-2"`},
		{"best available", "POST", "/api/sessions/" + sa + "/holds", `{"best":{"count":4,"sections":["S007"]}}`, 200, `"S007-1-01-6"`},
		{"checkout", "POST", "/api/sessions/" + sa + "/checkout", "", 200, `"state":"checkout"`},
		{"confirm", "POST", "/api/sessions/" + sa + "/confirm", `{"payment_ref":"p1"}`, 200, `"reservation":"R`},
		{"sold on the map", "GET", "/api/events/stadium/sections/S007", "", 200, `"id":"S007-1-01-6","section":"S007","block":"1","row":"01","number":6,"price":5000,"status":"reserved"`},
	}
	for _, tt := range tests {
		code, body := e.do(tt.method, tt.path, tt.body, alice)
		if code != tt.status || !strings.Contains(body, tt.contains) {
			t.Fatalf("%s: %d %.300s; want %d containing %q", tt.name, code, body, tt.status, tt.contains)
		}
	}
}
