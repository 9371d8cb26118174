package demo

import (
	"bytes"
	"embed"
	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/fairgate/fairgate/internal/bearer"
	"html/template"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

//go:embed static
var staticFS embed.FS

var shopPage = template.Must(template.ParseFS(staticFS, "static/shop.html"))

// shop is the protected origin: a ticket shop for one event. It learns the
// visitor's reservation session from the pass the waiting room forwards
// (verified again here), and proxies the operator page's calls to Caddy's
// admin API, which listens on loopback only.
type shop struct {
	codec *tokens.Codec
	room  string
	event string
	admin *url.URL
	// operatorToken guards the operator page and API, with a loopback check.
	operatorToken string
	mux           *http.ServeMux
}

func newShop(codec *tokens.Codec, room, event string, admin *url.URL, operatorToken string, payments *demoPaymentProvider) *shop {
	s := &shop{codec: codec, room: room, event: event, admin: admin, operatorToken: operatorToken, mux: http.NewServeMux()}
	s.mux.HandleFunc("POST /shop/pay/{session}", payments.pay)
	static, _ := fs.Sub(staticFS, "static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	s.mux.HandleFunc("GET /operator", s.operator(s.serveStatic("operator.html")))
	s.mux.HandleFunc("GET /operator/api/rooms", s.operator(s.adminProxy("/waiting_room/rooms")))
	s.mux.HandleFunc("/operator/api/rooms/{room}", s.operator(s.adminProxy("")))
	s.mux.HandleFunc("GET /operator/api/metrics", s.operator(s.metrics))
	s.mux.HandleFunc("GET /{$}", s.page)
	s.mux.HandleFunc("GET /shop", s.page)
	return s
}

func (s *shop) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *shop) serveStatic(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := staticFS.ReadFile("static/" + name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(b)
	}
}

// page renders the shop with the visitor's session, if their pass has one.
func (s *shop) page(w http.ResponseWriter, r *http.Request) {
	session := ""
	if pass := r.Header.Get("Fairgate-Pass"); pass != "" {
		if claims, err := s.codec.ParsePass(pass, s.room, time.Now()); err == nil {
			session = claims.Ses
		}
	}
	var buf bytes.Buffer
	if err := shopPage.Execute(&buf, struct{ Event, Session string }{s.event, session}); err != nil {
		http.Error(w, "rendering the shop failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}

// operatorCookie holds the operator token once the printed URL was opened.
const operatorCookie = "fairgate_operator"

// operator lets only a loopback client with the operator token through.
// The token comes from the URL printed at start (`/operator?token=…`,
// which sets a cookie and redirects), the cookie, or a bearer header.
func (s *shop) operator(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !fromLoopback(r) {
			http.Error(w, "the operator page answers only on loopback", http.StatusForbidden)
			return
		}
		if t := r.URL.Query().Get("token"); t != "" && r.URL.Path == "/operator" && s.tokenOK(t) {
			http.SetCookie(w, &http.Cookie{Name: operatorCookie, Value: t, Path: "/operator", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			http.Redirect(w, r, "/operator", http.StatusSeeOther)
			return
		}
		token, _ := bearer.Token(r)
		if c, err := r.Cookie(operatorCookie); err == nil && token == "" {
			token = c.Value
		}
		if !s.tokenOK(token) {
			http.Error(w, "open the operator URL `fairgate demo` printed at start", http.StatusUnauthorized)
			return
		}
		next(w, r)
	}
}

func (s *shop) tokenOK(t string) bool {
	return bearer.Equal(t, s.operatorToken)
}

// fromLoopback reports whether the client is on this machine: Caddy, in
// front, puts the client's address last in X-Forwarded-For.
func fromLoopback(r *http.Request) bool {
	addr := r.RemoteAddr
	if hops := r.Header.Values("X-Forwarded-For"); len(hops) > 0 {
		list := strings.Split(hops[len(hops)-1], ",")
		addr = strings.TrimSpace(list[len(list)-1])
	}
	if host, _, err := net.SplitHostPort(addr); err == nil {
		addr = host
	}
	ip, err := netip.ParseAddr(addr)
	return err == nil && ip.Unmap().IsLoopback()
}

var adminClient = &http.Client{Timeout: 5 * time.Second}

// adminProxy forwards to Caddy's admin API: GET the figures, POST changes.
func (s *shop) adminProxy(path string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if path == "" {
			path = "/waiting_room/rooms/" + url.PathEscape(r.PathValue("room"))
		}
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), r.Method, s.admin.String()+path, http.MaxBytesReader(w, r.Body, 4096))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		relayJSON(w, adminClient, req, "admin API unreachable")
	}
}

// relayJSON sends req with client and passes its JSON answer on, status
// and body, uncached; an unreachable service is a 502 saying unreachable.
func relayJSON(w http.ResponseWriter, client *http.Client, req *http.Request, unreachable string) {
	resp, err := client.Do(req)
	if err != nil {
		http.Error(w, unreachable, http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// metrics passes on fairgate's lines of Caddy's /metrics.
func (s *shop) metrics(w http.ResponseWriter, r *http.Request) {
	req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, s.admin.String()+"/metrics", nil)
	resp, err := adminClient.Do(req)
	if err != nil {
		http.Error(w, "admin API unreachable", http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "fairgate_") {
			_, _ = io.WriteString(w, line+"\n")
		}
	}
}
