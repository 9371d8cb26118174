package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"go.uber.org/zap"

	"github.com/fairgate/fairgate/admission"

	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/fairgate/fairgate/internal/httpserver"
	"github.com/fairgate/fairgate/room"
	"github.com/fairgate/fairgate/seats"
	"github.com/fairgate/fairgate/seats/boltstore"
	"github.com/fairgate/fairgate/seats/dynamostore"
	"github.com/fairgate/fairgate/seats/httpapi"
)

// seatsCommand is `fairgate seats [serve|layout]`.
func seatsCommand(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "layout":
			return seatsLayout(args[1:], stdout)
		case "init-tables":
			return seatsInitTables(ctx, args[1:], stdout)
		case "serve":
			args = args[1:]
		}
	}
	return seatsServe(ctx, args, stdout)
}

func seatsLayout(args []string, stdout io.Writer) error {
	fs := newFlags("seats layout", stdout)
	id := fs.String("id", "final-2026", "event id")
	name := fs.String("name", "The Final", "event name")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return writeJSON(stdout, seats.Stadium(*id, *name, time.Now().Add(30*24*time.Hour).Truncate(time.Hour)))
}

func seatsServe(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("seats", stdout)
	listen := fs.String("listen", "127.0.0.1:8082", "address")
	storeKind := fs.String("store", "bolt", "bolt (embedded file) or dynamodb")
	dbPath := fs.String("db", "fairgate-seats.db", "bbolt file of the embedded store")
	ddb := dynamoFlags(fs)
	keysFile := fs.String("keys", "", "the gateway's keys (the JSON of 'fairgate keygen') to verify passes (required)")
	room := fs.String("room", room.DefaultRoom, "the waiting room whose passes open sessions (the gateway's default room)")
	var events []string
	fs.Func("event", "an event the room's passes open sessions for (repeat for several; the first is the admission hook's); a pass for any other event gets 403 (required)", func(v string) error {
		events = append(events, v)
		return nil
	})
	paymentKeyFile := fs.String("payment-key-file", "", "file holding the key your payment provider (or shop backend) signs confirmations with (required; see Fairgate-Payment-Signature)")
	adminToken := fs.String("admin-token", os.Getenv("FAIRGATE_SEATS_ADMIN_TOKEN"), "bearer token for creating events")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *keysFile == "" {
		return usageErr("--keys is required: sessions need passes verified with the gateway's keys")
	}
	if *paymentKeyFile == "" {
		return usageErr("--payment-key-file is required: confirmations must be signed by your payment provider or shop backend")
	}
	paymentKey, err := os.ReadFile(*paymentKeyFile)
	if err != nil {
		return fmt.Errorf("reading the payment key: %w", err)
	}
	if paymentKey = bytes.TrimSpace(paymentKey); len(paymentKey) < 32 {
		return usageErr("--payment-key-file: the key needs at least 32 bytes")
	}
	if len(events) == 0 {
		return usageErr("--event is required: it binds the room's passes to the events they may buy")
	}
	ring, err := loadKeys(*keysFile)
	if err != nil {
		return err
	}
	var store seats.Store
	switch *storeKind {
	case "bolt":
		if store, err = boltstore.Open(*dbPath); err != nil {
			return err
		}
	case "dynamodb":
		if store, err = ddb.store(ctx); err != nil {
			return err
		}
	default:
		return usageErr("--store %q: want bolt or dynamodb", *storeKind)
	}
	log, err := zap.NewProduction()
	if err != nil {
		store.Close()
		return err
	}
	defer func() {
		// A store that cannot checkpoint at shutdown keeps its writes in its
		// log for the next start: said, not fatal.
		if err := store.Close(); err != nil {
			log.Error("closing the seat store", zap.Error(err))
		}
	}()
	api := httpapi.New(seats.NewService(store, time.Now), httpapi.Config{
		Codec: tokens.NewCodec(ring, admission.DefaultPolicy.Leeway), Room: *room,
		DefaultEvent: events[0], Events: events, PaymentKey: paymentKey, AdminToken: *adminToken, Logger: log,
	})
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	log.Info("fairgate seats listening", zap.String("addr", ln.Addr().String()), zap.String("store", *storeKind))
	// Slow bodies and idle clients are cut off; a shutdown drains for 15s.
	return httpserver.Serve(ctx, 15*time.Second, httpserver.Serving{Server: httpserver.New(api, httpserver.Defaults), Listener: ln})
}

// dynamo holds the DynamoDB flags: the SDK's standard configuration chain
// (environment, shared config, instance roles) plus an endpoint override.
type dynamo struct {
	endpoint, prefix *string
}

func dynamoFlags(fs *flagSet) dynamo {
	return dynamo{
		endpoint: fs.String("dynamodb-endpoint", os.Getenv("FAIRGATE_DYNAMODB_ENDPOINT"), "DynamoDB endpoint override, e.g. DynamoDB Local"),
		prefix:   fs.String("table-prefix", "fairgate", "table names: <prefix>_seats and <prefix>_reservations"),
	}
}

func (d dynamo) store(ctx context.Context) (*dynamostore.Store, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if *d.endpoint != "" {
			o.BaseEndpoint = aws.String(*d.endpoint)
		}
	})
	return dynamostore.New(client, dynamostore.Tables{Seats: *d.prefix + "_seats", Reservations: *d.prefix + "_reservations"}), nil
}

func seatsInitTables(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("seats init-tables", stdout)
	d := dynamoFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	store, err := d.store(ctx)
	if err != nil {
		return err
	}
	if err := store.CreateTables(ctx); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "tables %s_seats and %s_reservations ready\n", *d.prefix, *d.prefix)
	return err
}
