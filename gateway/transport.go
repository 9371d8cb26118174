package gateway

import (
	"net"
	"net/http"
	"time"
)

// newTransport is the upstream transport of the gateway's own calls and of
// `fairgate proxy`. Go's default keeps 2 idle connections per host, which
// holds a proxy near a tenth of its origin's throughput: keep enough for
// the concurrency a busy site sees.
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy: nil, // the upstream is addressed directly
		DialContext: (&net.Dialer{
			Timeout:   5 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:          4096,
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     true,
	}
}
