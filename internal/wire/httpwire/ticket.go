package httpwire

import (
	"net/http"
	"strings"
	"sync"

	"github.com/fairgate/fairgate/internal/reply"
	"github.com/fairgate/fairgate/internal/wire"
)

// Ticket is what the waiting page and apps learn of a waiting token.
// Nothing in it is derived from the lottery number.
type Ticket struct {
	Room string `json:"room"`
	// Lane is the priority lane the visitor waits in, absent for the
	// default lane.
	Lane  string `json:"lane,omitempty"`
	State string `json:"state"`
	// Token is the waiting token itself, for apps without cookies.
	Token      string `json:"token,omitempty"`
	Challenge  string `json:"challenge,omitempty"`
	Difficulty int    `json:"difficulty"`
	// NextAttempt is nxt, Unix milliseconds; RetryAfter is the same as
	// seconds from now, for clients whose clock is off.
	NextAttempt int64   `json:"next_attempt,omitempty"`
	RetryAfter  float64 `json:"retry_after"`
	// EstimateSeconds is the public wait estimate; absent when unknown.
	EstimateSeconds *float64 `json:"estimate_seconds,omitempty"`
	EstimateKnown   bool     `json:"estimate_known"`
	SaleStart       string   `json:"sale_start,omitempty"`
	Outcome         string   `json:"outcome,omitempty"`
	// Lang is the language of Message and Estimate (Accept-Language, or
	// the configured language); Message is the page's status line and
	// Estimate the wait in words, as the waiting page shows them.
	Lang     string `json:"lang"`
	Message  string `json:"message"`
	Estimate string `json:"estimate"`
	// TokenPlain says Token is plain cookie text (PlainCookieText), which
	// JSON holds as it is: the 600-byte token is then written without
	// looking at each byte.
	TokenPlain bool `json:"-"`
}

// ticketBuffers are the encoding buffers of waiting answers (about 1 KB).
var ticketBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// appendJSON appends t as encoding/json encodes it, newline included: the
// waiting answer is every poll's, and reflection was a fifth of its cost.
// TestTicketMatchesEncodingJSON holds it to encoding/json's bytes.
func (t *Ticket) appendJSON(b []byte) ([]byte, bool) {
	b = append(b, `{"room":`...)
	b = wire.AppendString(b, t.Room)
	if t.Lane != "" {
		b = append(b, `,"lane":`...)
		b = wire.AppendString(b, t.Lane)
	}
	b = append(b, `,"state":`...)
	b = wire.AppendString(b, t.State)
	if t.Token != "" {
		b = append(b, `,"token":`...)
		if t.TokenPlain { // letters, digits and -._ need no escape
			b = append(append(append(b, '"'), t.Token...), '"')
		} else {
			b = wire.AppendString(b, t.Token)
		}
	}
	if t.Challenge != "" {
		b = append(b, `,"challenge":`...)
		b = wire.AppendString(b, t.Challenge)
	}
	b = append(b, `,"difficulty":`...)
	b = wire.AppendInt(b, int64(t.Difficulty))
	if t.NextAttempt != 0 {
		b = append(b, `,"next_attempt":`...)
		b = wire.AppendInt(b, t.NextAttempt)
	}
	b = append(b, `,"retry_after":`...)
	var ok bool
	if b, ok = wire.AppendFloat(b, t.RetryAfter); !ok {
		return b, false
	}
	if t.EstimateSeconds != nil {
		b = append(b, `,"estimate_seconds":`...)
		if b, ok = wire.AppendFloat(b, *t.EstimateSeconds); !ok {
			return b, false
		}
	}
	b = append(b, `,"estimate_known":`...)
	b = wire.AppendBool(b, t.EstimateKnown)
	if t.SaleStart != "" {
		b = append(b, `,"sale_start":`...)
		b = wire.AppendString(b, t.SaleStart)
	}
	if t.Outcome != "" {
		b = append(b, `,"outcome":`...)
		b = wire.AppendString(b, t.Outcome)
	}
	b = append(b, `,"lang":`...)
	b = wire.AppendString(b, t.Lang)
	b = append(b, `,"message":`...)
	b = wire.AppendString(b, t.Message)
	b = append(b, `,"estimate":`...)
	b = wire.AppendString(b, t.Estimate)
	return append(b, "}\n"...), true
}

// WriteTicket writes t as reply.JSON does, without reflection unless Fast
// is off.
func WriteTicket(w http.ResponseWriter, status int, t *Ticket) {
	if !wire.Fast() {
		writeTicketJSON(w, status, t)
		return
	}
	bp := ticketBuffers.Get().(*[]byte)
	b, ok := t.appendJSON((*bp)[:0])
	if !ok { // a number JSON cannot hold: writeJSON's clean 500
		reply.EncodingFailed(w)
	} else {
		reply.Raw(w, status, b)
	}
	if cap(b) <= 16<<10 {
		*bp = b[:0]
		ticketBuffers.Put(bp)
	}
}

// writeTicketJSON is WriteTicket by encoding/json, on a copy made field
// by field, its strings cloned: t's contents handed to reflection would
// take the caller's estimate to the heap on every answer, fast or not
// (escape analysis does not tell one field of t from another).
// TestWriteTicket fills every field to check the copy misses none.
func writeTicketJSON(w http.ResponseWriter, status int, t *Ticket) {
	c := Ticket{
		Room: strings.Clone(t.Room), Lane: strings.Clone(t.Lane), State: strings.Clone(t.State),
		Token: strings.Clone(t.Token), Challenge: strings.Clone(t.Challenge),
		Difficulty: t.Difficulty, NextAttempt: t.NextAttempt, RetryAfter: t.RetryAfter,
		EstimateKnown: t.EstimateKnown, SaleStart: strings.Clone(t.SaleStart), Outcome: strings.Clone(t.Outcome),
		Lang: strings.Clone(t.Lang), Message: strings.Clone(t.Message), Estimate: strings.Clone(t.Estimate),
		TokenPlain: t.TokenPlain,
	}
	if t.EstimateSeconds != nil {
		secs := *t.EstimateSeconds
		c.EstimateSeconds = &secs
	}
	reply.JSON(w, status, &c)
}
