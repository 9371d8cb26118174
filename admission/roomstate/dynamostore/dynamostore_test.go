package dynamostore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/roomstate"
	"github.com/fairgate/fairgate/admission/roomstate/storetest"
	"github.com/fairgate/fairgate/internal/dynamotest"
)

// newStore creates a fresh table, so no test sees another's leftovers.
func newStore(t *testing.T, client *dynamodb.Client) *Store {
	t.Helper()
	s := New(client, fmt.Sprintf("rooms_%d", rand.Int64()), 10*time.Second)
	if err := s.CreateTable(context.Background()); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	client := dynamotest.Client(t)
	storetest.Run(t, func(t *testing.T) roomstate.Store { return newStore(t, client) })
}

func TestCreateTableTwice(t *testing.T) {
	s := newStore(t, dynamotest.Client(t))
	if err := s.CreateTable(context.Background()); err != nil {
		t.Fatalf("second CreateTable: %v", err)
	}
}

// BenchmarkHoldPlace is one admission's ledger write on DynamoDB Local; its
// allocations (not its time, which is DynamoDB Local's) show what the
// request's mapping and expressions cost the node.
func BenchmarkHoldPlace(b *testing.B) {
	endpoint := os.Getenv("FAIRGATE_DYNAMODB_ENDPOINT")
	if endpoint == "" {
		b.Skip("FAIRGATE_DYNAMODB_ENDPOINT unset")
	}
	client := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("fairgate", "local", ""),
	})
	s := New(client, fmt.Sprintf("rooms_%d", rand.Int64()), 10*time.Second)
	ctx := context.Background()
	if err := s.CreateTable(ctx); err != nil {
		b.Fatal(err)
	}
	until := storetest.T0.Add(time.Hour)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, ok, err := s.HoldPlace(ctx, "bench", strconv.Itoa(i), queue.Place{State: queue.PlaceUsed}, until, storetest.T0); !ok || err != nil {
			b.Fatalf("HoldPlace = %v, %v", ok, err)
		}
	}
}
