package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"go.uber.org/zap"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/internal/httpserver"
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
	room := fs.String("room", "main", "the waiting room whose passes open sessions")
	event := fs.String("event", "", "event of sessions opened without naming one (the admission hook's)")
	adminToken := fs.String("admin-token", os.Getenv("FAIRGATE_SEATS_ADMIN_TOKEN"), "bearer token for creating events")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *keysFile == "" {
		return usageErr("--keys is required: sessions need passes verified with the gateway's keys")
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
	defer store.Close()
	log, err := zap.NewProduction()
	if err != nil {
		return err
	}
	api := httpapi.New(seats.NewService(store, time.Now), httpapi.Config{
		Codec: admission.NewCodec(ring, admission.DefaultPolicy.Leeway), Room: *room,
		DefaultEvent: *event, AdminToken: *adminToken, Logger: log,
	})
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	log.Info("fairgate seats listening", zap.String("addr", ln.Addr().String()), zap.String("store", *storeKind))
	return serveUntil(ctx, ln, api)
}

// serveUntil serves h on ln until ctx ends, then drains gracefully.
func serveUntil(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := httpserver.New(h, httpserver.Defaults) // slow bodies and idle clients are cut off
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
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
