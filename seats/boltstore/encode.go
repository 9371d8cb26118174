package boltstore

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/fairgate/fairgate/seats"
)

// The store's two hot values, a seat and a session, are encoded by hand:
// every write encodes them inside its group's transaction, on the one
// goroutine that commits, where encoding/json's reflection was a tenth of
// that goroutine's time. The output is json.Marshal's, byte for byte
// (TestEncodeMatchesJSON, FuzzEncodeMatchesJSON): the file's format does
// not change, and values are still read with json.Unmarshal.

// encodeSeat is json.Marshal(seat).
func encodeSeat(s *seats.Seat) ([]byte, error) {
	b := make([]byte, 0, 192)
	b = append(b, `{"id":`...)
	b = appendString(b, s.ID)
	b = append(b, `,"section":`...)
	b = appendString(b, s.Section)
	b = append(b, `,"block":`...)
	b = appendString(b, s.Block)
	b = append(b, `,"row":`...)
	b = appendString(b, s.Row)
	b = append(b, `,"number":`...)
	b = strconv.AppendInt(b, int64(s.Number), 10)
	if s.Category != "" {
		b = append(b, `,"category":`...)
		b = appendString(b, s.Category)
	}
	b = append(b, `,"price":`...)
	b = strconv.AppendInt(b, s.Price, 10)
	b = append(b, `,"status":`...)
	b = appendString(b, string(s.Status))
	if s.Session != "" {
		b = append(b, `,"session":`...)
		b = appendString(b, s.Session)
	}
	var err error
	if !s.ExpiresAt.IsZero() {
		b = append(b, `,"expires_at":`...)
		if b, err = appendTime(b, s.ExpiresAt); err != nil {
			return nil, err
		}
	}
	if s.Reservation != "" {
		b = append(b, `,"reservation":`...)
		b = appendString(b, s.Reservation)
	}
	return append(b, '}'), nil
}

// encodeSession is json.Marshal(sess).
func encodeSession(s *seats.Session) ([]byte, error) {
	b := make([]byte, 0, 256+24*len(s.Seats))
	b = append(b, `{"id":`...)
	b = appendString(b, s.ID)
	b = append(b, `,"event":`...)
	b = appendString(b, s.EventID)
	b = append(b, `,"user":`...)
	b = appendString(b, s.UserID)
	if s.TokenID != "" {
		b = append(b, `,"token_id":`...)
		b = appendString(b, s.TokenID)
	}
	b = append(b, `,"state":`...)
	b = appendString(b, string(s.State))
	b = append(b, `,"limit":`...)
	b = strconv.AppendInt(b, int64(s.Limit), 10)
	b = append(b, `,"seats":`...)
	if s.Seats == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, id := range s.Seats {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, id)
		}
		b = append(b, ']')
	}
	var err error
	b = append(b, `,"created_at":`...)
	if b, err = appendTime(b, s.CreatedAt); err != nil {
		return nil, err
	}
	b = append(b, `,"expires_at":`...)
	if b, err = appendTime(b, s.ExpiresAt); err != nil {
		return nil, err
	}
	if s.Reservation != "" {
		b = append(b, `,"reservation":`...)
		b = appendString(b, s.Reservation)
	}
	if s.PaymentRef != "" {
		b = append(b, `,"payment_ref":`...)
		b = appendString(b, s.PaymentRef)
	}
	if !s.FinalisedAt.IsZero() {
		b = append(b, `,"finalised_at":`...)
		if b, err = appendTime(b, s.FinalisedAt); err != nil {
			return nil, err
		}
	}
	if !s.CheckoutUntil.IsZero() {
		b = append(b, `,"checkout_until":`...)
		if b, err = appendTime(b, s.CheckoutUntil); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendString appends s as json.Marshal quotes it: ids and states are
// plain ASCII, copied as they are; anything else (quotes, backslashes,
// control characters, <, > and & which encoding/json escapes, non-ASCII)
// goes through json.Marshal.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendTime appends t as time.Time's MarshalJSON does, with its error for
// a time RFC 3339 cannot write.
func appendTime(b []byte, t time.Time) ([]byte, error) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return nil, err
	}
	return append(b, '"'), nil
}
