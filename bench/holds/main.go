// Command holds measures seat holds per second and their latency through
// the seat service (domain rules plus store), on the embedded store or on
// DynamoDB: `go run ./bench/holds -store bolt -clients 64 -hot`.
//
// Each client opens its own session and holds one seat at a time, releasing
// it again, for -duration. Uncontended, each client has a row of its own;
// -hot puts every client on one 200-seat section, so holds race and lose.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/fairgate/fairgate/seats"
	"github.com/fairgate/fairgate/seats/boltstore"
	"github.com/fairgate/fairgate/seats/dynamostore"
)

func main() {
	kind := flag.String("store", "bolt", "bolt or dynamodb")
	endpoint := flag.String("endpoint", os.Getenv("FAIRGATE_DYNAMODB_ENDPOINT"), "DynamoDB endpoint")
	clients := flag.Int("clients", 64, "concurrent clients")
	hot := flag.Bool("hot", false, "every client on one hot section")
	duration := flag.Duration("duration", 10*time.Second, "how long to run")
	flag.Parse()
	if err := run(*kind, *endpoint, *clients, *hot, *duration); err != nil {
		fmt.Fprintln(os.Stderr, "holds:", err)
		os.Exit(1)
	}
}

func run(kind, endpoint string, clients int, hot bool, duration time.Duration) error {
	ctx := context.Background()
	var store seats.Store
	switch kind {
	case "bolt":
		dir, err := os.MkdirTemp("", "holds")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if store, err = boltstore.Open(filepath.Join(dir, "seats.db")); err != nil {
			return err
		}
	case "dynamodb":
		client := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
			Credentials: credentials.NewStaticCredentialsProvider("bench", "local", "")})
		n := time.Now().UnixNano()
		ds := dynamostore.New(client, dynamostore.Tables{Seats: fmt.Sprintf("bs_%d", n), Reservations: fmt.Sprintf("br_%d", n)})
		if err := ds.CreateTables(ctx); err != nil {
			return err
		}
		store = ds
	default:
		return fmt.Errorf("unknown store %q", kind)
	}
	defer store.Close()
	svc := seats.NewService(store, time.Now)

	// One section per client (a row of 20 each), plus one hot section of 200.
	ev := seats.Event{ID: "bench", Name: "bench", MaxSeats: 6, HoldWindow: seats.Duration(time.Hour)}
	row := func(id string, n int) seats.Row {
		r := seats.Row{ID: id}
		for i := 1; i <= n; i++ {
			r.Seats = append(r.Seats, seats.SeatSpec{Number: i})
		}
		return r
	}
	for c := range clients {
		ev.Sections = append(ev.Sections, seats.Section{ID: fmt.Sprintf("C%d", c), Blocks: []seats.Block{{ID: "1", Rows: []seats.Row{row("1", 20)}}}})
	}
	ev.Sections = append(ev.Sections, seats.Section{ID: "HOT", Blocks: []seats.Block{{ID: "1", Rows: []seats.Row{row("1", 100), row("2", 100)}}}})
	if _, err := svc.CreateEvent(ctx, ev); err != nil {
		return err
	}

	var mu sync.Mutex
	var lat []time.Duration
	var ok, lost, failed int
	deadline := time.Now().Add(duration)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			user := fmt.Sprintf("u%d", c)
			sess, err := svc.OpenSession(ctx, "bench", user, "t"+user, time.Now(), nil)
			if err != nil {
				mu.Lock()
				failed++
				mu.Unlock()
				return
			}
			var mine []time.Duration
			var good, lose, bad int
			for i := 0; time.Now().Before(deadline); i++ {
				seat := seats.SeatID(fmt.Sprintf("C%d", c), "1", "1", 1+i%20)
				if hot {
					seat = seats.SeatID("HOT", "1", fmt.Sprint(1+(c+i)%2), 1+(c*7+i*13)%100)
				}
				start := time.Now()
				_, err := svc.HoldSeats(ctx, sess.ID, user, []string{seat}, start, nil)
				mine = append(mine, time.Since(start))
				var taken *seats.TakenError
				switch {
				case err == nil:
					good++
					if _, err := svc.ReleaseSeat(ctx, sess.ID, user, seat, time.Now(), nil); err != nil {
						bad++
					}
				case errors.As(err, &taken):
					lose++
				default:
					bad++
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			ok, lost, failed = ok+good, lost+lose, failed+bad
			mu.Unlock()
		}()
	}
	wg.Wait()
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	mode := "uncontended"
	if hot {
		mode = "hot section"
	}
	fmt.Printf("| %s | %s | %d | %.0f | %.0f | %v | %v | %d | %d |\n", kind, mode, clients,
		float64(len(lat))/duration.Seconds(), float64(ok)/duration.Seconds(), pct(0.5).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond), lost, failed)
	return nil
}
