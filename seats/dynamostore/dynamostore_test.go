package dynamostore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/fairgate/fairgate/seats"
	"github.com/fairgate/fairgate/seats/storetest"
)

// localClient connects to DynamoDB Local, which `bash .ci/test` starts and
// names in FAIRGATE_DYNAMODB_ENDPOINT. Under CI its absence is a failure:
// the DynamoDB suite is never silently skipped there.
func localClient(t *testing.T) *dynamodb.Client {
	t.Helper()
	endpoint := os.Getenv("FAIRGATE_DYNAMODB_ENDPOINT")
	if endpoint == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("FAIRGATE_DYNAMODB_ENDPOINT is unset: CI must run the DynamoDB suite (bash .ci/test starts DynamoDB Local)")
		}
		t.Skip("FAIRGATE_DYNAMODB_ENDPOINT unset; `bash .ci/test` starts DynamoDB Local and runs this")
	}
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("fairgate", "local", ""),
	})
}

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
	client := localClient(t)
	storetest.Run(t, func(t *testing.T) seats.Store { return newStore(t, client) })
}

func TestCreateTablesTwice(t *testing.T) {
	client := localClient(t)
	s := newStore(t, client)
	if err := s.CreateTables(context.Background()); err != nil {
		t.Fatalf("second CreateTables: %v", err)
	}
}
