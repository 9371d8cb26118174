// Package waiting is the gateway's waiting answer as the e2e drivers read
// it: the token to present, its proof-of-work challenge and when to
// present it.
package waiting

import (
	"context"
	"encoding/json"
	"github.com/fairgate/fairgate/admission/tokens"
	"strconv"
	"time"
)

// Answer is a waiting answer (POST /_fairgate/token, or a 429 from
// /_fairgate/admit).
type Answer struct {
	Token      string  `json:"token"`
	Challenge  string  `json:"challenge"`
	Difficulty int     `json:"difficulty"`
	RetryAfter float64 `json:"retry_after"`
	// NextAttempt is the token's nxt, Unix milliseconds.
	NextAttempt int64  `json:"next_attempt"`
	Outcome     string `json:"outcome"`
	Error       *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Wait is how long to wait before the next attempt: retry_after.
func (a Answer) Wait() time.Duration {
	return time.Duration(a.RetryAfter * float64(time.Second))
}

// Solve solves the token's challenge and returns the nonce and the admit
// request's body.
func (a Answer) Solve(ctx context.Context) (nonce string, body []byte, err error) {
	n, err := tokens.Solve(ctx, a.Challenge, a.Difficulty)
	if err != nil {
		return "", nil, err
	}
	nonce = strconv.FormatUint(n, 10)
	body, err = json.Marshal(map[string]string{"nonce": nonce, "token": a.Token})
	return nonce, body, err
}

// Follow reads the 429 answer to an attempt with a and returns it: a new
// token replaces a; the prepared busy answer (no token) keeps a's token and
// takes its retry_after.
func (a *Answer) Follow(body []byte) Answer {
	var next Answer
	_ = json.Unmarshal(body, &next)
	if next.Token != "" {
		*a = next
	} else {
		a.RetryAfter = next.RetryAfter
	}
	return next
}
