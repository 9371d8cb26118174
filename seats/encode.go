package seats

import (
	"encoding/json"
	"strconv"
	"time"
)

// The two hot values, a seat and a session, are encoded by hand: a store
// encodes them on the one goroutine that commits every write, and the API
// answers every write with a session, so both skip encoding/json's
// reflection. The output is json.Marshal's, byte for byte (boltstore's
// TestEncodeMatchesJSON and FuzzEncodeMatchesJSON, httpapi's
// TestWriteSession).

// AppendSeatJSON appends json.Marshal(s) to b.
func AppendSeatJSON(b []byte, s *Seat) ([]byte, error) {
	e := encoder{b: b}
	e.b = AppendJSONString(append(e.b, `{"id":`...), s.ID)
	e.str(`,"section":`, s.Section)
	e.str(`,"block":`, s.Block)
	e.str(`,"row":`, s.Row)
	e.int(`,"number":`, int64(s.Number))
	e.strOmitEmpty(`,"category":`, s.Category)
	e.int(`,"price":`, s.Price)
	e.str(`,"status":`, string(s.Status))
	e.strOmitEmpty(`,"session":`, s.Session)
	e.timeOmitZero(`,"expires_at":`, s.ExpiresAt)
	e.strOmitEmpty(`,"reservation":`, s.Reservation)
	return e.end()
}

// AppendSessionJSON appends json.Marshal(s) to b.
func AppendSessionJSON(b []byte, s *Session) ([]byte, error) {
	e := encoder{b: b}
	e.b = AppendJSONString(append(e.b, `{"id":`...), s.ID)
	e.str(`,"event":`, s.EventID)
	e.str(`,"user":`, s.UserID)
	e.strOmitEmpty(`,"token_id":`, s.TokenID)
	e.str(`,"state":`, string(s.State))
	e.int(`,"limit":`, int64(s.Limit))
	e.key(`,"seats":`)
	if s.Seats == nil {
		e.b = append(e.b, "null"...)
	} else {
		e.b = append(e.b, '[')
		for i, id := range s.Seats {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.b = AppendJSONString(e.b, id)
		}
		e.b = append(e.b, ']')
	}
	e.time(`,"created_at":`, s.CreatedAt)
	e.time(`,"expires_at":`, s.ExpiresAt)
	e.strOmitEmpty(`,"reservation":`, s.Reservation)
	e.strOmitEmpty(`,"payment_ref":`, s.PaymentRef)
	e.timeOmitZero(`,"finalised_at":`, s.FinalisedAt)
	e.timeOmitZero(`,"checkout_until":`, s.CheckoutUntil)
	return e.end()
}

// encoder appends an object's fields after its first: each key given as
// it is written (`,"name":`, a constant copy), each value as encoding/json
// writes it (omitempty and omitzero included). The first error (a time
// RFC 3339 cannot write) stops it.
type encoder struct {
	b   []byte
	err error
}

// key appends a field's key, given as it is written: `,"name":`.
func (e *encoder) key(key string) {
	e.b = append(e.b, key...)
}

func (e *encoder) str(key, s string) {
	e.key(key)
	e.b = AppendJSONString(e.b, s)
}

func (e *encoder) strOmitEmpty(key, s string) {
	if s != "" {
		e.str(key, s)
	}
}

func (e *encoder) int(key string, n int64) {
	e.key(key)
	e.b = strconv.AppendInt(e.b, n, 10)
}

func (e *encoder) time(key string, t time.Time) {
	if e.err != nil {
		return
	}
	e.key(key)
	e.b, e.err = appendJSONTime(e.b, t)
}

func (e *encoder) timeOmitZero(key string, t time.Time) {
	if !t.IsZero() {
		e.time(key, t)
	}
}

// end closes the object.
func (e *encoder) end() ([]byte, error) {
	if e.err != nil {
		return nil, e.err
	}
	return append(e.b, '}'), nil
}

// AppendJSONString appends s as json.Marshal quotes it: ids and states are
// plain ASCII, copied as they are; anything else (quotes, backslashes,
// control characters, <, > and & which encoding/json escapes, non-ASCII)
// goes through json.Marshal.
func AppendJSONString(b []byte, s string) []byte {
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

// appendJSONTime appends t as time.Time's MarshalJSON does, with its error
// for a time RFC 3339 cannot write.
func appendJSONTime(b []byte, t time.Time) ([]byte, error) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return nil, err
	}
	return append(b, '"'), nil
}
