package dynamostore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

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
