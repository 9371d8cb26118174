package httpserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Serving is one server on one listener, over TLS when CertFile is set.
type Serving struct {
	Server            *http.Server
	Listener          net.Listener
	CertFile, KeyFile string
}

// ErrNotDrained is returned by Serve when connections were still open at
// the end of the shutdown grace (they are closed then).
var ErrNotDrained = errors.New("connections still open at the end of the shutdown grace")

// Serve runs every server until ctx ends or one of them stops with an
// error, then shuts them all down gracefully, together within grace. It
// returns the error that stopped serving, else ErrNotDrained (wrapped) if
// the grace ran out, else nil.
func Serve(ctx context.Context, grace time.Duration, servers ...Serving) error {
	errs := make(chan error, len(servers))
	for _, s := range servers {
		go func() {
			if s.CertFile != "" {
				errs <- s.Server.ServeTLS(s.Listener, s.CertFile, s.KeyFile)
				return
			}
			errs <- s.Server.Serve(s.Listener)
		}()
	}
	var stopped error
	select {
	case <-ctx.Done():
	case stopped = <-errs:
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	var drained error
	for _, s := range servers {
		if err := s.Server.Shutdown(shutdown); err != nil && drained == nil {
			drained = fmt.Errorf("%w: %w", ErrNotDrained, err)
		}
	}
	if stopped != nil && !errors.Is(stopped, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", stopped)
	}
	return drained
}
