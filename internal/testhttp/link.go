package testhttp

import (
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// Link is a loopback address in front of a server (a store): while cut,
// every connection is reset at once (a server that is down); once relayed
// to a target, connections go through. The listener stays the test's from
// the start, so no other test can take its port in between.
type Link struct {
	// Addr is the link's host:port.
	Addr   string
	target atomic.Pointer[string]
}

// NewLink returns a link that is cut until Relay.
func NewLink(t testing.TB) *Link {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	link := &Link{Addr: l.Addr().String()}
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			target := link.target.Load()
			if target == nil {
				in.(*net.TCPConn).SetLinger(0) // a reset, as from a closed port
				in.Close()
				continue
			}
			out, err := net.DialTimeout("tcp", *target, 5*time.Second)
			if err != nil {
				in.Close()
				continue
			}
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	return link
}

// Relay restores the link: connections go to target from now on.
func (l *Link) Relay(target string) { l.target.Store(&target) }
