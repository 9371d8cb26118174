// Package wire holds fairgate's hand-written wire code and the one switch
// over all of it: the readers and writers of the admit poll's bytes that
// replace encoding/json and net/http's cookie functions where a profile
// shows the replacement pays at least 5% of its endpoint
// (docs/BENCHMARKS.md, "Wire code"). Each reads or writes exactly what its
// standard-library equivalent does, which an equivalence fuzzer beside it
// holds it to, and each falls back to that equivalent, for input it does
// not handle and whenever Fast is off.
//
// This package holds the switch and the JSON codec the domain uses (every
// token's claims, JSON values), and imports no net/http; the pieces of the
// HTTP endpoints (the admit body, the waiting answer, the cookie lines)
// are in package httpwire, under the same switch.
package wire

import "sync/atomic"

var fast atomic.Bool

func init() { fast.Store(true) }

// Fast reports whether the hand-written code is used. It is on unless
// SetFast turned it off.
func Fast() bool { return fast.Load() }

// SetFast turns the hand-written code on or off for the whole process
// (off: the standard library does all of it, byte for byte the same) and
// returns the setting it replaced.
func SetFast(on bool) (was bool) { return fast.Swap(on) }
