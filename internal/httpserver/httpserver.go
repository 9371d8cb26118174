// Package httpserver builds the http.Servers of fairgate's listeners with
// timeouts, so that no client holds a connection (and the goroutine serving
// it) by sending slowly or by idling, and serves them until told to stop
// (Serve), draining gracefully.
package httpserver

import (
	"net/http"
	"time"
)

// Timeouts bound how long a client may take. Zero fields take the defaults.
type Timeouts struct {
	// Header bounds reading a request's headers. Default: 10s.
	Header time.Duration
	// Read bounds reading a whole request, headers and body: a body
	// trickled slower than that is cut off. A hijacked connection (a
	// websocket) is free of it. Default: 60s.
	Read time.Duration
	// Idle bounds how long a kept-alive connection waits for its next
	// request. Default: 120s.
	Idle time.Duration
}

// Defaults are the timeouts zero fields take.
var Defaults = Timeouts{Header: 10 * time.Second, Read: 60 * time.Second, Idle: 120 * time.Second}

// New returns a server for h with t's timeouts (defaults for zero fields)
// and a 64 KiB header limit.
func New(h http.Handler, t Timeouts) *http.Server {
	t = t.withDefaults()
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.Header,
		ReadTimeout:       t.Read,
		IdleTimeout:       t.Idle,
		MaxHeaderBytes:    64 << 10,
	}
}

func (t Timeouts) withDefaults() Timeouts {
	if t.Header <= 0 {
		t.Header = Defaults.Header
	}
	if t.Read <= 0 {
		t.Read = Defaults.Read
	}
	if t.Idle <= 0 {
		t.Idle = Defaults.Idle
	}
	return t
}
