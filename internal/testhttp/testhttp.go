// Package testhttp sends the tests' HTTP requests to real listeners: a
// request from a method, a URL and a body, header lines given as name,
// value pairs, the whole answer read. A request that cannot be built or
// sent stops the test.
package testhttp

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// NewRequest is http.NewRequest with a string body; an error stops the test.
func NewRequest(t testing.TB, method, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// Do sets header's name, value pairs on req, sends it with client
// (http.DefaultClient if nil) and returns the response with its body read
// and closed.
func Do(t testing.TB, client *http.Client, req *http.Request, header ...string) (*http.Response, []byte) {
	t.Helper()
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer to %s %s: %v", req.Method, req.URL, err)
	}
	return resp, b
}
