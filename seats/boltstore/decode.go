package boltstore

import (
	"encoding/json"
	"strconv"
	"strings"
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
	p := scanner{b: raw}
	for key, ok := p.first(); ok; key, ok = p.following() {
		switch string(key) {
		case "id":
			p.str(&s.ID)
		case "section":
			p.strIn(&s.Section, s.ID)
		case "block":
			p.strIn(&s.Block, s.ID)
		case "row":
			p.strIn(&s.Row, s.ID)
		case "number":
			p.int(&s.Number)
		case "category":
			p.str(&s.Category)
		case "price":
			p.int64(&s.Price)
		case "status":
			p.str((*string)(&s.Status), string(seats.Available), string(seats.Locked), string(seats.Reserved), string(seats.NotForSale))
		case "session":
			p.str(&s.Session)
		case "expires_at":
			p.time(&s.ExpiresAt)
		case "reservation":
			p.str(&s.Reservation)
		default:
			p.bad = true
		}
	}
	if p.read() {
		return nil
	}
	*s = seats.Seat{}
	return json.Unmarshal(raw, s)
}

// decodeSession is json.Unmarshal(raw, sess) into a zero session, as
// decodeSeat.
func decodeSession(raw []byte, s *seats.Session) error {
	p := scanner{b: raw}
	for key, ok := p.first(); ok; key, ok = p.following() {
		switch string(key) {
		case "id":
			p.str(&s.ID)
		case "event":
			p.str(&s.EventID)
		case "user":
			p.str(&s.UserID)
		case "token_id":
			p.str(&s.TokenID)
		case "state":
			p.str((*string)(&s.State), string(seats.StateReservation), string(seats.StateCheckout), string(seats.StateFinalised), string(seats.StateCancelled))
		case "limit":
			p.int(&s.Limit)
		case "seats":
			p.strs(&s.Seats)
		case "created_at":
			p.time(&s.CreatedAt)
		case "expires_at":
			p.time(&s.ExpiresAt)
		case "reservation":
			p.str(&s.Reservation)
		case "payment_ref":
			p.str(&s.PaymentRef)
		case "finalised_at":
			p.time(&s.FinalisedAt)
		case "checkout_until":
			p.time(&s.CheckoutUntil)
		default:
			p.bad = true
		}
	}
	if p.read() {
		return nil
	}
	*s = seats.Session{}
	return json.Unmarshal(raw, s)
}

// scanner reads the compact JSON encoding/json writes, one object of
// "key":value pairs: first and following give the keys in turn, the
// caller reads each value, and read reports whether the whole input was
// that. At anything else it sets bad, stops, and the caller falls back.
type scanner struct {
	b    []byte
	i    int
	bad  bool
	done bool // the object's closing brace was read
}

// first reads the opening brace and the first key.
func (p *scanner) first() ([]byte, bool) {
	if !p.next('{') {
		p.bad = true
		return nil, false
	}
	if p.next('}') {
		p.done = true
		return nil, false
	}
	return p.key()
}

// following reads what comes after a value: the closing brace, or a comma
// and the next key.
func (p *scanner) following() ([]byte, bool) {
	switch {
	case p.bad:
		return nil, false
	case p.next('}'):
		p.done = true
		return nil, false
	case p.next(','):
		return p.key()
	}
	p.bad = true
	return nil, false
}

func (p *scanner) key() ([]byte, bool) {
	k, ok := p.raw()
	if !ok || !p.next(':') {
		p.bad = true
		return nil, false
	}
	return k, true
}

// read reports whether the input was one object, read whole.
func (p *scanner) read() bool { return !p.bad && p.done && p.i == len(p.b) }

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

// str reads a string; one of known, if it is one, is used as it is
// rather than copied (a seat's status, a session's state).
func (p *scanner) str(dst *string, known ...string) {
	s, ok := p.raw()
	if !ok {
		p.bad = true
		return
	}
	for _, k := range known {
		if string(s) == k {
			*dst = k
			return
		}
	}
	*dst = string(s)
}

// strIn reads a string, sharing in's bytes if in holds it: a seat's
// section, block and row are parts of its id, decoded before them.
func (p *scanner) strIn(dst *string, in string) {
	s, ok := p.raw()
	if !ok {
		p.bad = true
		return
	}
	if i := strings.Index(in, string(s)); i >= 0 && len(s) > 0 {
		*dst = in[i : i+len(s)]
		return
	}
	*dst = string(s)
}

func (p *scanner) strs(dst *[]string) {
	if !p.next('[') {
		p.bad = true
		return
	}
	out := []string{}
	if !p.next(']') {
		for {
			s, ok := p.raw()
			if !ok {
				p.bad = true
				return
			}
			out = append(out, string(s))
			if p.next(']') {
				break
			}
			if !p.next(',') {
				p.bad = true
				return
			}
		}
	}
	*dst = out
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

func (p *scanner) int64(dst *int64) {
	d, ok := p.digits()
	n, err := strconv.ParseInt(string(d), 10, 64)
	if !ok || err != nil {
		p.bad = true
		return
	}
	*dst = n
}

func (p *scanner) int(dst *int) {
	d, ok := p.digits()
	n, err := strconv.ParseInt(string(d), 10, strconv.IntSize)
	if !ok || err != nil {
		p.bad = true
		return
	}
	*dst = int(n)
}

// time reads an RFC 3339 time as time.Time's UnmarshalJSON does.
func (p *scanner) time(dst *time.Time) {
	s, ok := p.raw()
	var t time.Time
	if !ok || t.UnmarshalText(s) != nil {
		p.bad = true
		return
	}
	*dst = t
}
