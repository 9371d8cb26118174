package gateway

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/fairgate/fairgate/internal/wire/httpwire"
)

// setCookie sets a per-room cookie: HttpOnly, SameSite=Lax, Secure under TLS.
// An empty value deletes it.
func setCookie(w http.ResponseWriter, r *http.Request, name, value string, expires time.Time, trusted []netip.Prefix) {
	addCookie(&answerHeaders{h: w.Header()}, r, name, value, httpwire.PlainCookieText(value), expires, trusted)
}

// clearCookie adds to answer headers h the line that deletes cookie name.
func clearCookie(h http.Header, r *http.Request, name string, trusted []netip.Prefix) {
	addCookie(&answerHeaders{h: h}, r, name, "", httpwire.PlainCookieText(""), time.Unix(0, 0), trusted)
}

// addCookie is setCookie for an answer writing its headers through h, the
// value's httpwire.PlainCookieText known.
func addCookie(h *answerHeaders, r *http.Request, name, value string, valuePlain bool, expires time.Time, trusted []netip.Prefix) {
	if line := httpwire.CookieLine(name, value, valuePlain, expires, isTLS(r, trusted)); line != "" {
		h.add("Set-Cookie", line)
	}
}

func isTLS(r *http.Request, trusted []netip.Prefix) bool {
	if r.TLS != nil {
		return true
	}
	if len(trusted) == 0 { // no proxy to believe: the peer need not be parsed
		return false
	}
	if peer, ok := peerIP(r); ok && trustedPeer(peer, trusted) {
		return strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
	}
	return false
}

// clientIP is the client's address: the peer, or, when the peer is a
// trusted proxy, the last X-Forwarded-For hop that is not one.
func clientIP(r *http.Request, trusted []netip.Prefix) (netip.Addr, bool) {
	peer, ok := peerIP(r)
	if !ok || !trustedPeer(peer, trusted) {
		return peer, ok
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		ip, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return peer, true
		}
		ip = ip.Unmap()
		if !trustedPeer(ip, trusted) {
			return ip, true
		}
	}
	return peer, true
}

func peerIP(r *http.Request) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return ip.Unmap(), true
}

func trustedPeer(ip netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
