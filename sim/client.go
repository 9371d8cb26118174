package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// client calls the gateway's handler in process, as httptest.NewRequest and
// httptest.NewRecorder would, without their per-request allocations: one
// response buffer and header map are reused, and each request is a shallow
// copy of a prepared one. A run calls it from one goroutine.
type client struct {
	handler http.Handler
	token   http.Request // templates: method, URL, host, remote address
	admit   http.Request
	body    bytes.Reader
	rec     recorder
}

func newClient(h http.Handler) *client {
	c := &client{handler: h}
	c.token = template("/_fairgate/token")
	c.admit = template("/_fairgate/admit")
	c.rec.header = make(http.Header)
	return c
}

// template is a request as httptest.NewRequest makes it for target.
func template(target string) http.Request {
	return http.Request{
		Method: http.MethodPost, URL: &url.URL{Path: target}, RequestURI: target,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Host: "example.com", RemoteAddr: "192.0.2.1:1234",
	}
}

// do sends a POST to the template's path with body and the one header
// (name empty: none), and returns the status and the response body, valid
// until the next call. (A request's nil context reads as
// context.Background(), which is httptest.NewRequest's.)
func (c *client) do(tmpl *http.Request, body []byte, name, value string) (int, []byte) {
	req := *tmpl
	req.Header = make(http.Header, 1)
	if name != "" {
		req.Header.Set(name, value)
	}
	c.body.Reset(body)
	req.Body = io.NopCloser(&c.body)
	req.ContentLength = int64(len(body))
	c.rec.reset()
	c.handler.ServeHTTP(&c.rec, &req)
	return c.rec.status(), c.rec.body.Bytes()
}

// recorder is a reusable http.ResponseWriter.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) reset() {
	clear(r.header)
	r.code = 0
	r.body.Reset()
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(p)
}

func (r *recorder) status() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}

// admitBody is the JSON of an admission attempt, {"nonce":…,"token":…}.
func admitBody(buf []byte, nonce, token string) []byte {
	if !plainJSON(nonce) || !plainJSON(token) {
		b, _ := json.Marshal(map[string]string{"nonce": nonce, "token": token})
		return append(buf[:0], b...)
	}
	buf = append(buf[:0], `{"nonce":"`...)
	buf = append(buf, nonce...)
	buf = append(buf, `","token":"`...)
	buf = append(buf, token...)
	return append(buf, `"}`...)
}

// plainJSON reports whether s needs no escaping in a JSON string.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// decodeAnswer reads the fields of answer from the gateway's JSON: the
// top-level token, challenge, difficulty, next_attempt and outcome, and
// error.code. It walks the object once without building anything; for
// anything it does not expect (an escaped string in a field it reads, a
// number that is not an integer) it falls back to encoding/json.
func decodeAnswer(data []byte) answer {
	var a answer
	if !scanAnswer(data, &a) {
		a = answer{}
		_ = json.Unmarshal(data, &a)
	}
	return a
}

func scanAnswer(data []byte, a *answer) bool {
	sc := scanner{data: data}
	if !sc.byte('{') {
		return false
	}
	return sc.object(func(key []byte) bool {
		if !exactKey(key, topKeys) {
			return false
		}
		switch string(key) {
		case "token":
			return sc.str(&a.Token)
		case "challenge":
			return sc.str(&a.Challenge)
		case "outcome":
			return sc.str(&a.Outcome)
		case "difficulty":
			n, ok := sc.int()
			a.Difficulty = int(n)
			return ok
		case "next_attempt":
			n, ok := sc.int()
			a.NextAttempt = n
			return ok
		case "error":
			sc.space()
			if sc.i < len(sc.data) && sc.data[sc.i] == 'n' {
				return sc.skip()
			}
			if !sc.byte('{') {
				return false
			}
			return sc.object(func(key []byte) bool {
				if !exactKey(key, errorKeys) {
					return false
				}
				if string(key) == "code" {
					return sc.str(&a.Error.Code)
				}
				return sc.skip()
			})
		}
		return sc.skip()
	})
}

var (
	topKeys   = []string{"token", "challenge", "outcome", "difficulty", "next_attempt", "error"}
	errorKeys = []string{"code"}
)

// exactKey reports whether key can be read byte for byte: encoding/json
// matches keys without regard to case (Unicode folding included), so a key
// that is not ASCII, or that folds to one of names without being it, is
// left to encoding/json.
func exactKey(key []byte, names []string) bool {
	for _, c := range key {
		if c >= 0x80 {
			return false
		}
	}
	for _, n := range names {
		if len(key) == len(n) && string(key) != n && bytes.EqualFold(key, []byte(n)) {
			return false
		}
	}
	return true
}

// scanner is the least of a JSON reader decodeAnswer needs.
type scanner struct {
	data []byte
	i    int
}

func (s *scanner) space() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) byte(c byte) bool {
	s.space()
	if s.i < len(s.data) && s.data[s.i] == c {
		s.i++
		return true
	}
	return false
}

// object reads the members of an object whose '{' was read, calling value
// with each key to read its value.
func (s *scanner) object(value func(key []byte) bool) bool {
	if s.byte('}') {
		return true
	}
	for {
		key, ok := s.rawString()
		if !ok || !s.byte(':') || !value(key) {
			return false
		}
		if s.byte('}') {
			return true
		}
		if !s.byte(',') {
			return false
		}
	}
}

// rawString reads a string without escapes and returns its bytes.
func (s *scanner) rawString() ([]byte, bool) {
	if !s.byte('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case '"':
			s.i++
			return s.data[start : s.i-1], true
		case '\\':
			return nil, false
		}
		s.i++
	}
	return nil, false
}

// str reads an ASCII string without escapes into dst (encoding/json
// would replace invalid UTF-8: anything else is left to it).
func (s *scanner) str(dst *string) bool {
	b, ok := s.rawString()
	if !ok {
		return false
	}
	for _, c := range b {
		if c >= 0x80 || c < 0x20 {
			return false
		}
	}
	*dst = string(b)
	return true
}

func (s *scanner) int() (int64, bool) {
	s.space()
	start := s.i
	for s.i < len(s.data) && (s.data[s.i] == '-' || s.data[s.i] >= '0' && s.data[s.i] <= '9') {
		s.i++
	}
	n, err := strconv.ParseInt(string(s.data[start:s.i]), 10, 64)
	if err != nil || s.i < len(s.data) && (s.data[s.i] == '.' || s.data[s.i] == 'e' || s.data[s.i] == 'E') {
		return 0, false
	}
	return n, true
}

// skip reads any value.
func (s *scanner) skip() bool {
	s.space()
	if s.i >= len(s.data) {
		return false
	}
	switch c := s.data[s.i]; {
	case c == '"':
		s.i++
		for s.i < len(s.data) {
			switch s.data[s.i] {
			case '\\':
				s.i += 2
				continue
			case '"':
				s.i++
				return true
			}
			s.i++
		}
		return false
	case c == '{':
		s.i++
		return s.object(func([]byte) bool { return s.skip() })
	case c == '[':
		s.i++
		if s.byte(']') {
			return true
		}
		for {
			if !s.skip() {
				return false
			}
			if s.byte(']') {
				return true
			}
			if !s.byte(',') {
				return false
			}
		}
	default: // a number, true, false or null
		start := s.i
		for s.i < len(s.data) {
			switch s.data[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return s.i > start
			}
			s.i++
		}
		return s.i > start
	}
}
