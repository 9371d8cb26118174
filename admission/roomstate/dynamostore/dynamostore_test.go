package dynamostore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/fairgate/fairgate/admission/roomstate"
	"github.com/fairgate/fairgate/admission/roomstate/storetest"
)

// localClient connects to DynamoDB Local, which `bash .ci/test` starts and
// names in FAIRGATE_DYNAMODB_ENDPOINT. Under CI its absence is a failure:
// the DynamoDB suite is never silently skipped there.
func localClient(t *testing.T, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	t.Helper()
	endpoint := os.Getenv("FAIRGATE_DYNAMODB_ENDPOINT")
	if endpoint == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("FAIRGATE_DYNAMODB_ENDPOINT is unset: CI must run the DynamoDB suite (bash .ci/test starts DynamoDB Local)")
		}
		t.Skip("FAIRGATE_DYNAMODB_ENDPOINT unset; `bash .ci/test` starts DynamoDB Local and runs this")
	}
	client := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("fairgate", "local", ""),
	}, optFns...)
	warmUp.Do(func() { warmUpErr = raceUntilWarm(client) })
	if warmUpErr != nil {
		t.Fatalf("warming DynamoDB Local up: %v", warmUpErr)
	}
	return client
}

var (
	warmUp    sync.Once
	warmUpErr error
)

// raceUntilWarm puts a fresh DynamoDB Local through the suite's kinds of
// races once per test process, outcomes ignored. DynamoDB Local 2026-05-28
// (version 3.3.1), in the first minute of traffic after it starts, let
// racing conditional writes of one key both succeed: the suite caught two
// winners of one ledger id and 163 of 100 budget reserved in 9 of 11 runs
// against a fresh process (with and without SDK retries, for PutItem,
// UpdateItem and TransactWriteItems alike), and none in 10 runs once the
// process had served such races. With this warm-up it still caught one in
// 3 fresh runs: the emulator's defect is reduced here, not removed.
// DynamoDB evaluates a condition atomically with its write; the suite must
// judge the store's logic, not the emulator's start-up.
func raceUntilWarm(client *dynamodb.Client) error {
	ctx := context.Background()
	t0 := time.Unix(0, 0)
	var errMu sync.Mutex
	var first error
	note := func(err error) {
		errMu.Lock()
		defer errMu.Unlock()
		if first == nil {
			first = err
		}
	}
	for range 4 {
		s := New(client, fmt.Sprintf("warmup_%d", rand.Int64()), 10*time.Second)
		if err := s.CreateTable(ctx); err != nil {
			return err
		}
		for i := range 20 {
			var wg sync.WaitGroup
			for range 16 {
				wg.Add(2)
				go func() {
					defer wg.Done()
					if _, err := storetest.Consume(ctx, s, "warmup", strconv.Itoa(i), t0.Add(time.Hour), t0); err != nil {
						note(err)
					}
				}()
				go func() {
					defer wg.Done()
					w := roomstate.Window{Index: int64(i), Limit: 50, Expires: t0.Add(time.Hour)}
					if _, err := s.ReserveBudget(ctx, "warmup", w, 7); err != nil {
						note(err)
					}
				}()
			}
			wg.Wait()
		}
		if _, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &s.table}); err != nil {
			return err
		}
	}
	return first
}

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
	client := localClient(t)
	storetest.Run(t, func(t *testing.T) roomstate.Store { return newStore(t, client) })
}

func TestCreateTableTwice(t *testing.T) {
	s := newStore(t, localClient(t))
	if err := s.CreateTable(context.Background()); err != nil {
		t.Fatalf("second CreateTable: %v", err)
	}
}
