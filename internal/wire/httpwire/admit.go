package httpwire

import (
	"bytes"
	"unicode/utf8"

	"github.com/fairgate/fairgate/internal/wire"
)

// AdmitRequest is the body of an admit attempt.
type AdmitRequest struct {
	Nonce string `json:"nonce"`
	// Token is for apps that keep the waiting token themselves.
	Token string `json:"token,omitempty"`
	// Return is where to send the visitor once admitted: a path on this site.
	Return string `json:"return,omitempty"`
}

// ParseAdmit reads the admit body the waiting page sends,
// {"nonce":"<digits>"} or {"nonce":"<digits>","return":"<path>"} exactly
// as JSON.stringify writes them, without encoding/json: every poll sends
// one, and the general decoder was a tenth of the poll's cost. It reports
// false for anything else (an escape, whitespace, another field or order,
// invalid UTF-8) and when Fast is off, and the general decoder then reads
// the body; FuzzParseAdmit holds the two to the same result.
func ParseAdmit(body []byte) (AdmitRequest, bool) {
	if !wire.Fast() {
		return AdmitRequest{}, false
	}
	rest, ok := bytes.CutPrefix(body, []byte(`{"nonce":"`))
	if !ok {
		return AdmitRequest{}, false
	}
	i := 0
	for i < len(rest) && i < 20 && '0' <= rest[i] && rest[i] <= '9' {
		i++
	}
	if i == 0 || i >= len(rest) || rest[i] != '"' {
		return AdmitRequest{}, false
	}
	req := AdmitRequest{Nonce: string(rest[:i])}
	rest = rest[i+1:]
	if string(rest) == "}" {
		return req, true
	}
	ret, ok := bytes.CutPrefix(rest, []byte(`,"return":"`))
	if !ok || len(ret) < 2 || string(ret[len(ret)-2:]) != `"}` {
		return AdmitRequest{}, false
	}
	ret = ret[:len(ret)-2]
	for _, c := range ret {
		if c < 0x20 || c == '"' || c == '\\' {
			return AdmitRequest{}, false
		}
	}
	if !utf8.Valid(ret) {
		return AdmitRequest{}, false
	}
	req.Return = string(ret)
	return req, true
}
