package dynamostore

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/fairgate/fairgate/internal/dynamotest"
	"github.com/fairgate/fairgate/seats"
	"github.com/fairgate/fairgate/seats/storetest"
)

func newStore(t *testing.T, client *dynamodb.Client) *Store {
	t.Helper()
	n := rand.Int64()
	s := New(client, Tables{Seats: fmt.Sprintf("seats_%d", n), Reservations: fmt.Sprintf("reservations_%d", n)})
	if err := s.CreateTables(context.Background()); err != nil {
		t.Fatalf("CreateTables: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	client := dynamotest.Client(t)
	storetest.Run(t, func(t *testing.T) seats.Store { return newStore(t, client) })
}

func TestCreateTablesTwice(t *testing.T) {
	client := dynamotest.Client(t)
	s := newStore(t, client)
	if err := s.CreateTables(context.Background()); err != nil {
		t.Fatalf("second CreateTables: %v", err)
	}
}

// TestEventStoredWhole: an event item that holds its sections itself, as
// stores wrote it before sections had items of their own, reads whole.
func TestEventStoredWhole(t *testing.T) {
	s := newStore(t, dynamotest.Client(t))
	ev := storetest.Event("whole").Header()
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	it, err := marshal(eventItem{itemKey: itemKey{PK: ev.ID + "#EVENT", SK: meta}, Data: string(raw), State: eventReady})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(s.tables.Seats), Item: it}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Event(context.Background(), ev.ID)
	if err != nil || len(got.Sections) != 2 || got.Sections[1].ID != "AB" {
		t.Fatalf("Event: %+v %v", got, err)
	}
}
