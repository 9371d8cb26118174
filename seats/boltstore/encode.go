package boltstore

import "github.com/fairgate/fairgate/seats"

// The store's two hot values, a seat and a session, are encoded by hand
// (seats.AppendSeatJSON, seats.AppendSessionJSON): every write encodes them
// inside its group's transaction, on the one goroutine that commits. The
// output is json.Marshal's, byte for byte (TestEncodeMatchesJSON,
// FuzzEncodeMatchesJSON): the file's format does not change, and values
// are still read as JSON.

// encodeSeat is json.Marshal(seat).
func encodeSeat(s *seats.Seat) ([]byte, error) {
	return seats.AppendSeatJSON(make([]byte, 0, 192), s)
}

// encodeSession is json.Marshal(sess).
func encodeSession(s *seats.Session) ([]byte, error) {
	return seats.AppendSessionJSON(make([]byte, 0, 256+24*len(s.Seats)), s)
}
