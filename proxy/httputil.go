package proxy

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"
)

// errorJSON is the error shape of every fairgate endpoint.
type errorJSON struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Reason  string `json:"reason,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-store")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	writeErrorReason(w, status, code, message, "")
}

func writeErrorReason(w http.ResponseWriter, status int, code, message, reason string) {
	writeJSON(w, status, errorJSON{errorBody{Code: code, Message: message, Reason: reason}})
}

// decodeJSON reads a bounded JSON body into v, answering 413 or 400 itself.
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeBodyError(w, err)
		return err
	}
	if dec.More() {
		err := errors.New("trailing data after the JSON object")
		writeError(w, http.StatusBadRequest, "malformed", err.Error())
		return err
	}
	return nil
}

func writeBodyError(w http.ResponseWriter, err error) {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", "request body too large")
		return
	}
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		writeError(w, http.StatusBadRequest, "malformed", "unknown field "+field)
		return
	}
	writeError(w, http.StatusBadRequest, "malformed", "request body is not valid JSON")
}

func allowMethod(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	writeError(w, http.StatusMethodNotAllowed, "method", "method not allowed")
	return false
}

// setCookie sets a per-room cookie: HttpOnly, SameSite=Lax, Secure under TLS.
// An empty value deletes it.
func setCookie(w http.ResponseWriter, r *http.Request, name, value string, expires time.Time, trusted []netip.Prefix) {
	if line := cookieLine(name, value, expires, isTLS(r, trusted)); line != "" {
		w.Header().Add("Set-Cookie", line)
	}
}

func isTLS(r *http.Request, trusted []netip.Prefix) bool {
	if r.TLS != nil {
		return true
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
