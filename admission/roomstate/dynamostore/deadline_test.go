package dynamostore

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/roomstate"
	"github.com/fairgate/fairgate/admission/roomstate/storetest"
)

// TestStalledDynamoDBIsAnErrorNotAHang points the store at an endpoint
// that accepts connections and never answers: every call of the store
// must come back with an error by its deadline (the calls run at once).
func TestStalledDynamoDBIsAnErrorNotAHang(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered, until the test ends
		}
	}()
	client := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://" + ln.Addr().String()),
		Credentials:  credentials.NewStaticCredentialsProvider("fairgate", "local", ""),
	})
	const timeout = 300 * time.Millisecond
	s := New(client, "stalled", timeout)
	// The test's own bound: a call without its deadline ends here, late.
	ctx, cancel := context.WithTimeout(context.Background(), 20*timeout)
	defer cancel()
	calls := map[string]func() error{
		"LoadControl": func() error { _, _, err := s.LoadControl(ctx, "r"); return err },
		"ReserveBudget": func() error {
			_, err := s.ReserveBudget(ctx, "r", roomstate.Window{Index: 1, Limit: 10, Expires: storetest.T0}, 1)
			return err
		},
		"HoldPlace": func() error {
			_, err := storetest.Consume(ctx, s, "r", "p", storetest.T0.Add(time.Hour), storetest.T0)
			return err
		},
		"Population": func() error { _, _, err := s.Population(ctx, "r", storetest.T0); return err },
		"SaveControl": func() error {
			_, err := s.SaveControl(ctx, "r", roomstate.Control{State: "queue", Rate: 1}, 3)
			return err
		},
		"ReturnBudget": func() error {
			return s.ReturnBudget(ctx, "r", roomstate.Window{Index: 1, Limit: 10, Expires: storetest.T0}, 1, 1)
		},
		"UsePlace":          func() error { _, err := s.UsePlace(ctx, "r", "p", queue.Place{}, storetest.T0); return err },
		"LookupPlace":       func() error { _, err := s.LookupPlace(ctx, "r", "p", storetest.T0); return err },
		"ReleasePlace":      func() error { return s.ReleasePlace(ctx, "r", "p") },
		"PublishPopulation": func() error { return s.PublishPopulation(ctx, "r", "n", 1, storetest.T0) },
		"ReserveRanks":      func() error { _, err := s.ReserveRanks(ctx, "r", 1); return err },
	}
	var wg sync.WaitGroup
	for name, call := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			err := call()
			took := time.Since(start)
			if err == nil {
				t.Errorf("%s against a stalled endpoint succeeded", name)
			}
			if took > 10*timeout {
				t.Errorf("%s took %v against a call timeout of %v", name, took, timeout)
			}
		}()
	}
	wg.Wait()
}
