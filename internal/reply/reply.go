// Package reply writes fairgate's JSON answers, for the gateway's endpoints
// (package gateway) and the seat API (package seats/httpapi) alike: the same
// headers on every answer, one shape for every error, and bounded decoding
// of JSON request bodies with the same 400 and 413 answers.
package reply

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Error is the body of every error answer, under "error".
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Reason says why a room is closed (the gateway).
	Reason string `json:"reason,omitempty"`
	// Seats are the seats lost to another buyer (the seat API's 409).
	Seats []string `json:"seats,omitempty"`
	// Session is the visitor's live session (the seat API's 409).
	Session string `json:"session,omitempty"`
}

type errorJSON struct {
	Error Error `json:"error"`
}

// buffers are reused encoding buffers: an answer is encoded whole before
// its headers go out, so a value that fails to encode is a clean 500.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooled keeps a rare huge answer (a seat map) from pinning its buffer.
const maxPooled = 64 << 10

// JSON writes v as the answer, with Content-Type, Content-Length,
// X-Content-Type-Options: nosniff and, unless the handler set one,
// Cache-Control: no-store.
func JSON(w http.ResponseWriter, status int, v any) {
	buf := buffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooled {
			buf.Reset()
			buffers.Put(buf)
		}
	}()
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		EncodingFailed(w)
		return
	}
	Raw(w, status, buf.Bytes())
}

// EncodingFailed is the answer when an answer could not be encoded (a
// number JSON cannot hold): 500, internal.
func EncodingFailed(w http.ResponseWriter) {
	Fail(w, http.StatusInternalServerError, Error{Code: "internal", Message: "encoding the answer failed"})
}

// Raw writes body, JSON already encoded, as JSON does. Its keys are
// canonical and go straight into the map, as Header.Set would put them
// after canonicalizing each again on every answer. The values share one
// array, each header a slice of it capped at its one value (so another
// handler's append copies it): one allocation instead of four.
func Raw(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	n := 3
	if c := h["Cache-Control"]; len(c) == 0 || c[0] == "" {
		n++ // no-store, unless the handler set its own policy
	}
	v := make([]string, n)
	v[0], v[1], v[2] = "application/json", strconv.Itoa(len(body)), "nosniff"
	h["Content-Type"] = v[0:1:1]
	h["Content-Length"] = v[1:2:2]
	h["X-Content-Type-Options"] = v[2:3:3]
	if n == 4 {
		v[3] = "no-store"
		h["Cache-Control"] = v[3:4:4]
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// Fail writes e as an error answer.
func Fail(w http.ResponseWriter, status int, e Error) { JSON(w, status, errorJSON{e}) }

// Decode reads a JSON body of at most limit bytes into v, refusing unknown
// fields and trailing data; on failure it has answered 413 or 400 itself.
func Decode(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	bp := bodies.Get().(*[]byte)
	defer putBody(bp)
	body, err := ReadBody(w, r, limit, (*bp)[:0])
	*bp = body[:0]
	if err != nil {
		return err
	}
	return Unmarshal(w, body, v)
}

// bodies are reused request body buffers.
var bodies = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// Body returns a reused buffer for ReadBody; PutBody gives it back.
func Body() *[]byte { return bodies.Get().(*[]byte) }

// PutBody returns a buffer taken with Body, set to what ReadBody returned.
func PutBody(bp *[]byte) { putBody(bp) }

func putBody(bp *[]byte) {
	if cap(*bp) <= maxPooled {
		*bp = (*bp)[:0]
		bodies.Put(bp)
	}
}

// ReadBody appends the request body, at most limit bytes, to dst; on
// failure it has answered 413 or 400 itself. The body is read in one read
// when it is no larger than its Content-Length says, not in a decoder's
// small chunks: each read of a request body may cost the server a deadline
// reset (Caddy's idle timeout).
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64, dst []byte) ([]byte, error) {
	if err := CheckLength(w, r, limit); err != nil {
		return dst, err
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	if n := r.ContentLength; n > 0 && n <= limit {
		dst = slices.Grow(dst, int(n)+1) // +1: room to see the end in the same read
	}
	dst, err := AppendAll(dst, body)
	if err != nil {
		BodyError(w, err)
	}
	return dst, err
}

// AppendAll appends what r reads to dst until EOF, as io.ReadAll does to
// an empty slice: a caller reads into a reused buffer.
func AppendAll(dst []byte, r io.Reader) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			dst = slices.Grow(dst, bytes.MinRead)
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		switch {
		case err == io.EOF:
			return dst, nil
		case err != nil:
			return dst, err
		}
	}
}

// CheckLength answers 413 and returns a *http.MaxBytesError when the
// request declares a body over limit, before any of it is read: a client
// that declares more than it sends would otherwise hold the handler until
// the server's read timeout, to be told 400.
func CheckLength(w http.ResponseWriter, r *http.Request, limit int64) error {
	if r.ContentLength <= limit {
		return nil
	}
	err := &http.MaxBytesError{Limit: limit}
	// The body is left unread: without Connection: close, net/http would
	// read what it can of it before sending the answer.
	w.Header().Set("Connection", "close")
	BodyError(w, err)
	return err
}

// Discard reads and drops the request body, at most limit bytes; on
// failure it has answered 413 or 400 itself.
func Discard(w http.ResponseWriter, r *http.Request, limit int64) error {
	if err := CheckLength(w, r, limit); err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, limit)); err != nil {
		BodyError(w, err)
		return err
	}
	return nil
}

// Unmarshal is Decode for a body already read.
func Unmarshal(w http.ResponseWriter, body []byte, v any) error {
	return decode(w, bytes.NewReader(body), v)
}

func decode(w http.ResponseWriter, body io.Reader, v any) error {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		BodyError(w, err)
		return err
	}
	if dec.More() {
		err := errors.New("trailing data after the JSON object")
		Fail(w, http.StatusBadRequest, Error{Code: "malformed", Message: err.Error()})
		return err
	}
	return nil
}

// BodyError answers a request whose body could not be read or decoded:
// 413 if it was too large, else 400, naming an unknown field but never
// echoing the decoder's internals.
func BodyError(w http.ResponseWriter, err error) {
	switch BodyReason(err) {
	case "too_large":
		Fail(w, http.StatusRequestEntityTooLarge, Error{Code: "too_large", Message: "request body too large"})
	case "unknown_field":
		field, _ := strings.CutPrefix(err.Error(), unknownField)
		Fail(w, http.StatusBadRequest, Error{Code: "malformed", Message: "unknown field " + field})
	default:
		Fail(w, http.StatusBadRequest, Error{Code: "malformed", Message: "request body is not valid JSON"})
	}
}

// unknownField starts encoding/json's error for a field DisallowUnknownFields refuses.
const unknownField = "json: unknown field "

// BodyReason names what BodyError answers for err: too_large (413),
// unknown_field or malformed (400), for metrics.
func BodyReason(err error) string {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return "too_large"
	case strings.HasPrefix(err.Error(), unknownField):
		return "unknown_field"
	default:
		return "malformed"
	}
}
