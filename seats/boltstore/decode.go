package boltstore

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/fairgate/fairgate/seats"
)

// decodeSeat is json.Unmarshal(raw, seat) into a zero seat. What
// encodeSeat writes (json.Marshal's form: compact, known keys, plain ASCII
// strings) is read by hand; anything else — an escape, another key,
// whitespace, null — goes to json.Unmarshal. Like the encoders, this runs
// on the committing goroutine, where json.Unmarshal was a sixth of its
// time. TestDecodeMatchesJSON and FuzzDecodeMatchesJSON hold it to
// json.Unmarshal.
func decodeSeat(raw []byte, s *seats.Seat) error {
	if decodeObject(raw, func(key string, p *scanner) bool {
		switch key {
		case "id":
			return p.str(&s.ID)
		case "section":
			return p.str(&s.Section)
		case "block":
			return p.str(&s.Block)
		case "row":
			return p.str(&s.Row)
		case "number":
			return p.int(&s.Number)
		case "category":
			return p.str(&s.Category)
		case "price":
			return p.int64(&s.Price)
		case "status":
			return p.str((*string)(&s.Status))
		case "session":
			return p.str(&s.Session)
		case "expires_at":
			return p.time(&s.ExpiresAt)
		case "reservation":
			return p.str(&s.Reservation)
		}
		return false
	}) {
		return nil
	}
	*s = seats.Seat{}
	return json.Unmarshal(raw, s)
}

// decodeSession is json.Unmarshal(raw, sess) into a zero session, as
// decodeSeat.
func decodeSession(raw []byte, s *seats.Session) error {
	if decodeObject(raw, func(key string, p *scanner) bool {
		switch key {
		case "id":
			return p.str(&s.ID)
		case "event":
			return p.str(&s.EventID)
		case "user":
			return p.str(&s.UserID)
		case "token_id":
			return p.str(&s.TokenID)
		case "state":
			return p.str((*string)(&s.State))
		case "limit":
			return p.int(&s.Limit)
		case "seats":
			return p.strs(&s.Seats)
		case "created_at":
			return p.time(&s.CreatedAt)
		case "expires_at":
			return p.time(&s.ExpiresAt)
		case "reservation":
			return p.str(&s.Reservation)
		case "payment_ref":
			return p.str(&s.PaymentRef)
		case "finalised_at":
			return p.time(&s.FinalisedAt)
		case "checkout_until":
			return p.time(&s.CheckoutUntil)
		}
		return false
	}) {
		return nil
	}
	*s = seats.Session{}
	return json.Unmarshal(raw, s)
}

// scanner reads the compact JSON encoding/json writes; every method
// reports false at anything else, and the caller falls back.
type scanner struct {
	b []byte
	i int
}

// decodeObject reads {"key":value,...}, handing each key to field, which
// reads its value; it reports whether all of raw was read.
func decodeObject(raw []byte, field func(key string, p *scanner) bool) bool {
	p := &scanner{b: raw}
	if !p.next('{') {
		return false
	}
	if p.next('}') {
		return p.i == len(p.b)
	}
	for {
		key, ok := p.raw()
		if !ok || !p.next(':') || !field(string(key), p) {
			return false
		}
		if p.next('}') {
			return p.i == len(p.b)
		}
		if !p.next(',') {
			return false
		}
	}
}

func (p *scanner) next(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// raw reads a string of printable ASCII without escapes.
func (p *scanner) raw() ([]byte, bool) {
	if !p.next('"') {
		return nil, false
	}
	start := p.i
	for ; p.i < len(p.b); p.i++ {
		switch c := p.b[p.i]; {
		case c == '"':
			p.i++
			return p.b[start : p.i-1], true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

func (p *scanner) str(dst *string) bool {
	s, ok := p.raw()
	if ok {
		*dst = string(s)
	}
	return ok
}

func (p *scanner) strs(dst *[]string) bool {
	if !p.next('[') {
		return false
	}
	out := []string{}
	if !p.next(']') {
		for {
			var s string
			if !p.str(&s) {
				return false
			}
			out = append(out, s)
			if p.next(']') {
				break
			}
			if !p.next(',') {
				return false
			}
		}
	}
	*dst = out
	return true
}

// digits reads an integer as encoding/json writes one: -?[0-9]+.
func (p *scanner) digits() ([]byte, bool) {
	start := p.i
	p.next('-')
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	if p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		return nil, false
	}
	d := p.b[start:p.i]
	if u := d[min(1, len(d)):]; len(d) > 0 && d[0] == '-' && len(u) > 1 && u[0] == '0' || len(d) > 1 && d[0] == '0' {
		return nil, false // a leading zero, which JSON forbids
	}
	return d, len(d) > 0
}

func (p *scanner) int64(dst *int64) bool {
	d, ok := p.digits()
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(string(d), 10, 64)
	if err != nil {
		return false
	}
	*dst = n
	return true
}

func (p *scanner) int(dst *int) bool {
	d, ok := p.digits()
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(string(d), 10, strconv.IntSize)
	if err != nil {
		return false
	}
	*dst = int(n)
	return true
}

// time reads an RFC 3339 time as time.Time's UnmarshalJSON does.
func (p *scanner) time(dst *time.Time) bool {
	s, ok := p.raw()
	if !ok {
		return false
	}
	var t time.Time
	if t.UnmarshalText(s) != nil {
		return false
	}
	*dst = t
	return true
}
