// Package drive is what every e2e driver does between its checks: an HTTP
// call read whole (bounded), and a pause that ends with its context.
package drive

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"
)

// MaxBody bounds how much of an answer Do reads.
const MaxBody = 1 << 20

// Do sends method url with body (none if nil), Accept: application/json
// and, if set, a Cookie header, and returns the status, up to MaxBody of
// the body and the headers. The headers are empty, not nil, on an error.
func Do(ctx context.Context, client *http.Client, method, url string, body []byte, cookie string) (int, []byte, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, http.Header{}, err
	}
	req.Header.Set("Accept", "application/json")
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, http.Header{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody))
	return resp.StatusCode, b, resp.Header, err
}

// Sleep pauses for d or until ctx ends, whichever comes first.
func Sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
