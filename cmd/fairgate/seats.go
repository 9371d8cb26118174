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

	"go.uber.org/zap"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/seats"
	"github.com/fairgate/fairgate/seats/boltstore"
	"github.com/fairgate/fairgate/seats/httpapi"
)

// seatsCommand is `fairgate seats [serve|layout]`.
func seatsCommand(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "layout":
			return seatsLayout(args[1:], stdout)
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
	dbPath := fs.String("db", "fairgate-seats.db", "bbolt file of the embedded store")
	keysFile := fs.String("keys", "", "the gateway's keys (JSON of `fairgate keygen`) to verify passes (required)")
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
	store, err := boltstore.Open(*dbPath)
	if err != nil {
		return err
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
	log.Info("fairgate seats listening", zap.String("addr", ln.Addr().String()), zap.String("db", *dbPath))
	return serveUntil(ctx, ln, api)
}

// serveUntil serves h on ln until ctx ends, then drains gracefully.
func serveUntil(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
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
