package proxy

import (
	"bytes"
	"unicode/utf8"
)

// parseAdmitFast reads the admit body the waiting page sends,
// {"nonce":"<digits>"} or {"nonce":"<digits>","return":"<path>"} exactly
// as JSON.stringify writes them, without encoding/json: every poll sends
// one, and the general decoder was a tenth of the poll's cost. It reports
// false for anything else (an escape, whitespace, another field or order,
// invalid UTF-8), which the general decoder then reads as before;
// FuzzAdmitFast holds the two to the same result.
func parseAdmitFast(body []byte) (admitRequest, bool) {
	rest, ok := bytes.CutPrefix(body, []byte(`{"nonce":"`))
	if !ok {
		return admitRequest{}, false
	}
	i := 0
	for i < len(rest) && i < 20 && '0' <= rest[i] && rest[i] <= '9' {
		i++
	}
	if i == 0 || i >= len(rest) || rest[i] != '"' {
		return admitRequest{}, false
	}
	req := admitRequest{Nonce: string(rest[:i])}
	rest = rest[i+1:]
	if string(rest) == "}" {
		return req, true
	}
	ret, ok := bytes.CutPrefix(rest, []byte(`,"return":"`))
	if !ok || len(ret) < 2 || string(ret[len(ret)-2:]) != `"}` {
		return admitRequest{}, false
	}
	ret = ret[:len(ret)-2]
	for _, c := range ret {
		if c < 0x20 || c == '"' || c == '\\' {
			return admitRequest{}, false
		}
	}
	if !utf8.Valid(ret) {
		return admitRequest{}, false
	}
	req.Return = string(ret)
	return req, true
}
