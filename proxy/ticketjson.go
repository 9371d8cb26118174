package proxy

import (
	"net/http"
	"sync"

	"github.com/fairgate/fairgate/internal/reply"
)

// ticketBuffers are the encoding buffers of waiting answers (about 1 KB).
var ticketBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// appendJSON appends t as encoding/json encodes it, newline included: the
// waiting answer is every poll's, and reflection was a tenth of its cost.
// TestTicketJSONMatchesEncodingJSON holds it to encoding/json's bytes.
func (t *ticketJSON) appendJSON(b []byte) ([]byte, bool) {
	b = append(b, `{"room":`...)
	b = reply.AppendString(b, t.Room)
	if t.Lane != "" {
		b = append(b, `,"lane":`...)
		b = reply.AppendString(b, t.Lane)
	}
	b = append(b, `,"state":`...)
	b = reply.AppendString(b, t.State)
	if t.Token != "" {
		b = append(b, `,"token":`...)
		if t.tokenPlain { // letters, digits and -._ need no escape
			b = append(append(append(b, '"'), t.Token...), '"')
		} else {
			b = reply.AppendString(b, t.Token)
		}
	}
	if t.Challenge != "" {
		b = append(b, `,"challenge":`...)
		b = reply.AppendString(b, t.Challenge)
	}
	b = append(b, `,"difficulty":`...)
	b = reply.AppendInt(b, int64(t.Difficulty))
	if t.NextAttempt != 0 {
		b = append(b, `,"next_attempt":`...)
		b = reply.AppendInt(b, t.NextAttempt)
	}
	b = append(b, `,"retry_after":`...)
	var ok bool
	if b, ok = reply.AppendFloat(b, t.RetryAfter); !ok {
		return b, false
	}
	if t.EstimateSeconds != nil {
		b = append(b, `,"estimate_seconds":`...)
		if b, ok = reply.AppendFloat(b, *t.EstimateSeconds); !ok {
			return b, false
		}
	}
	b = append(b, `,"estimate_known":`...)
	b = reply.AppendBool(b, t.EstimateKnown)
	if t.SaleStart != "" {
		b = append(b, `,"sale_start":`...)
		b = reply.AppendString(b, t.SaleStart)
	}
	if t.Outcome != "" {
		b = append(b, `,"outcome":`...)
		b = reply.AppendString(b, t.Outcome)
	}
	b = append(b, `,"lang":`...)
	b = reply.AppendString(b, t.Lang)
	b = append(b, `,"message":`...)
	b = reply.AppendString(b, t.Message)
	b = append(b, `,"estimate":`...)
	b = reply.AppendString(b, t.Estimate)
	return append(b, "}\n"...), true
}

// writeTicket writes t as writeJSON would, without reflection.
func writeTicket(w http.ResponseWriter, status int, t *ticketJSON) {
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
