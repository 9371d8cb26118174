package demo

import (
	"bytes"
	"embed"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/fairgate/fairgate/admission"
)

//go:embed static
var staticFS embed.FS

var shopPage = template.Must(template.ParseFS(staticFS, "static/shop.html"))

// shop is the protected origin: a ticket shop for one event. It learns the
// visitor's reservation session from the pass the waiting room forwards
// (verified again here), and proxies the operator page's calls to Caddy's
// admin API, which listens on loopback only.
type shop struct {
	codec *admission.Codec
	room  string
	event string
	admin *url.URL
	mux   *http.ServeMux
}

func newShop(codec *admission.Codec, room, event string, admin *url.URL, payments *demoPaymentProvider) *shop {
	s := &shop{codec: codec, room: room, event: event, admin: admin, mux: http.NewServeMux()}
	s.mux.HandleFunc("POST /shop/pay/{session}", payments.pay)
	static, _ := fs.Sub(staticFS, "static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	s.mux.HandleFunc("GET /operator", s.serveStatic("operator.html"))
	s.mux.HandleFunc("GET /operator/api/rooms", s.adminProxy("/waiting_room/rooms"))
	s.mux.HandleFunc("/operator/api/rooms/{room}", s.adminProxy(""))
	s.mux.HandleFunc("GET /operator/api/metrics", s.metrics)
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
		resp, err := adminClient.Do(req)
		if err != nil {
			http.Error(w, "admin API unreachable", http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}
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
