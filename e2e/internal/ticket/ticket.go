// Package ticket is the gateway's waiting answer as the e2e drivers read
// it: the token to present, its proof-of-work challenge and when to
// present it.
package ticket

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/fairgate/fairgate/admission"
)

// Ticket is a waiting answer (POST /_fairgate/token, or a 429 from
// /_fairgate/admit).
type Ticket struct {
	Token      string  `json:"token"`
	Challenge  string  `json:"challenge"`
	Difficulty int     `json:"difficulty"`
	RetryAfter float64 `json:"retry_after"`
	Outcome    string  `json:"outcome"`
	Error      *struct {
		Code string `json:"code"`
	} `json:"error"`
}

// Wait is how long to wait before the next attempt: retry_after.
func (t Ticket) Wait() time.Duration {
	return time.Duration(t.RetryAfter * float64(time.Second))
}

// Solve solves the token's challenge and returns the nonce and the admit
// request's body.
func (t Ticket) Solve(ctx context.Context) (nonce string, body []byte, err error) {
	n, err := admission.Solve(ctx, t.Challenge, t.Difficulty)
	if err != nil {
		return "", nil, err
	}
	nonce = strconv.FormatUint(n, 10)
	body, err = json.Marshal(map[string]string{"nonce": nonce, "token": t.Token})
	return nonce, body, err
}

// Follow reads a 429 answer to an attempt with t and returns the answer: a
// new token replaces t; the prepared busy answer (no token) keeps t's token
// and takes its retry_after.
func (t *Ticket) Follow(answer []byte) Ticket {
	var next Ticket
	_ = json.Unmarshal(answer, &next)
	if next.Token != "" {
		*t = next
	} else {
		t.RetryAfter = next.RetryAfter
	}
	return next
}
