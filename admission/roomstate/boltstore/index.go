package boltstore

import (
	"bytes"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// placeIndex is the set of ledger keys the file may hold, kept in memory
// so that looking up a place never admitted or slotted (every "keep
// waiting" answer) needs no read transaction. bbolt locks the file for one
// process, and every write to the ledger goes through this Store, so the
// set can be exact in the direction that matters: a key not in it is
// certainly not in the file. It may hold more (expired records not yet
// swept, a hold that lost): those are asked of the file as before.
//
// The rule that keeps it so: a key is added before any write that may put
// it, and removed only after a delete of it committed while no such write
// was in flight.
type placeIndex struct {
	mu      sync.RWMutex
	held    map[placeKey]struct{}
	writing map[placeKey]int // puts in flight
}

type placeKey struct{ room, id string }

func newPlaceIndex() *placeIndex {
	return &placeIndex{held: make(map[placeKey]struct{}), writing: make(map[placeKey]int)}
}

// load adds every key of the ledger bucket (at Open).
func (x *placeIndex) load(tx *bolt.Tx) error {
	return tx.Bucket(ledgerBucket).ForEach(func(k, _ []byte) error {
		if pk, ok := splitKey(k); ok {
			x.held[pk] = struct{}{}
		}
		return nil
	})
}

// mayHold reports whether the file may hold a record of the place.
func (x *placeIndex) mayHold(room, id string) bool {
	x.mu.RLock()
	_, ok := x.held[placeKey{room, id}]
	x.mu.RUnlock()
	return ok
}

// write marks the start of a write that may put the place; the func it
// returns marks its end, whatever the write's outcome.
func (x *placeIndex) write(room, id string) (done func()) {
	k := placeKey{room, id}
	x.mu.Lock()
	x.held[k] = struct{}{}
	x.writing[k]++
	x.mu.Unlock()
	return func() {
		x.mu.Lock()
		if x.writing[k]--; x.writing[k] <= 0 {
			delete(x.writing, k)
		}
		x.mu.Unlock()
	}
}

// deleted forgets keys whose delete committed, unless a write that may put
// one again is in flight.
func (x *placeIndex) deleted(keys ...placeKey) {
	x.mu.Lock()
	for _, k := range keys {
		if x.writing[k] == 0 {
			delete(x.held, k)
		}
	}
	x.mu.Unlock()
}

// splitKey reads a ledger key, room \x00 id.
func splitKey(k []byte) (placeKey, bool) {
	i := bytes.IndexByte(k, 0)
	if i < 0 {
		return placeKey{}, false
	}
	return placeKey{string(k[:i]), string(k[i+1:])}, true
}
