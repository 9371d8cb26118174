package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/fairgate/fairgate/seats/httpapi"
)

// rawConn is a minimal HTTP/1.1 client on one kept-alive connection, as
// load generators such as wrk are: it writes each request in one write and
// reads the answer's status and Content-Length body on the same goroutine,
// without net/http's transport (a connection pool, and a read and a write
// goroutine per connection handing each request over by channels), which
// would take a good share of the 2 cores the service shares with it. It
// understands what the seat API sends: a Content-Length body on every
// answer; anything else is an error.
type rawConn struct {
	addr string
	conn net.Conn
	r    *bufio.Reader
	req  []byte
	body []byte
}

func newRawConn(addr string) *rawConn { return &rawConn{addr: addr} }

// do sends one request with the pass and a fresh Idempotency-Key and
// returns the answer's status and body (valid until the next call).
func (c *rawConn) do(method, path, body, pass string) (int, []byte, error) {
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", c.addr, 10*time.Second)
		if err != nil {
			return 0, nil, err
		}
		c.conn, c.r = conn, bufio.NewReaderSize(conn, 16<<10)
	}
	status, got, err := c.roundTrip(method, path, body, pass)
	if err != nil {
		c.conn.Close()
		c.conn = nil
	}
	return status, got, err
}

func (c *rawConn) roundTrip(method, path, body, pass string) (int, []byte, error) {
	if err := c.conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return 0, nil, err
	}
	b := c.req[:0]
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, c.addr...)
	b = append(b, "\r\n"+httpapi.PassHeader+": "...)
	b = append(b, pass...)
	b = append(b, "\r\nIdempotency-Key: "...)
	b = append(b, rand.Text()...)
	if body != "" {
		b = append(b, "\r\nContent-Type: application/json\r\nContent-Length: "...)
		b = strconv.AppendInt(b, int64(len(body)), 10)
	}
	b = append(b, "\r\n\r\n"...)
	b = append(b, body...)
	c.req = b
	if _, err := c.conn.Write(b); err != nil {
		return 0, nil, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return 0, nil, err
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	length, closing := -1, false
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return 0, nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, nil, fmt.Errorf("bad header %q", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return 0, nil, fmt.Errorf("bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Connection")) && bytes.EqualFold(value, []byte("close")):
			closing = true
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return 0, nil, errors.New("a chunked answer: the raw client reads Content-Length bodies only")
		}
	}
	if length < 0 {
		return 0, nil, errors.New("an answer without Content-Length")
	}
	if cap(c.body) < length {
		c.body = make([]byte, length)
	}
	c.body = c.body[:length]
	if _, err := io.ReadFull(c.r, c.body); err != nil {
		return 0, nil, err
	}
	if closing {
		c.conn.Close()
		c.conn = nil
	}
	return status, c.body, nil
}
