package proxy

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io"
	"math"
	"mime"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

//go:embed assets/waiting.js assets/worker.js assets/pow.js assets/waiting.css assets/waiting.html assets/closed.html
var assetFS embed.FS

// assetVersion is a hash of the embedded assets: it is part of their URLs,
// so they can be cached forever and still change with each release.
var assetVersion = func() string {
	h := sha256.New()
	for _, name := range []string{"waiting.js", "worker.js", "pow.js", "waiting.css"} {
		b, _ := assetFS.ReadFile("assets/" + name)
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}()

var (
	waitingTemplate = template.Must(template.ParseFS(assetFS, "assets/waiting.html"))
	closedTemplate  = template.Must(template.ParseFS(assetFS, "assets/closed.html"))
)

type pages struct {
	closed, soldOut []byte // custom pages, if configured
	assets          string
	prefix          string
	status          int
	rendered        atomic.Pointer[renderedPage]
}

func newPages(s settings) (*pages, error) {
	p := &pages{assets: s.Prefix + "/assets/" + assetVersion, prefix: s.Prefix, status: s.WaitingStatus}
	var err error
	if s.ClosedPage != "" {
		if p.closed, err = os.ReadFile(s.ClosedPage); err != nil {
			return nil, fmt.Errorf("closed_page: %w", err)
		}
	}
	if s.SoldOutPage != "" {
		if p.soldOut, err = os.ReadFile(s.SoldOutPage); err != nil {
			return nil, fmt.Errorf("sold_out_page: %w", err)
		}
	}
	return p, nil
}

func wantsJSON(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	return strings.Contains(accept, "application/json") && !strings.Contains(accept, "text/html")
}

// serveWaiting answers a protected request without a pass: the waiting
// page for browsers, a JSON 429 for apps.
func (g *Gateway) serveWaiting(w http.ResponseWriter, r *http.Request, now time.Time) {
	view := g.shared.Room.View(now)
	est, known := view.EstimateWait(now)
	if wantsJSON(r) {
		st := statusJSON{Room: view.Name, State: string(view.State), Rate: view.Rate}
		if known {
			secs := math.Round(est.Seconds())
			st.EstimateSeconds = &secs
		}
		w.Header().Set("Retry-After", strconv.Itoa(int(time.Duration(g.cfg.MinBackoff).Seconds())))
		w.Header().Set("Link", fmt.Sprintf(`<%s/token>; rel="fairgate-token"`, g.cfg.Prefix))
		writeJSON(w, http.StatusTooManyRequests, struct {
			Error  errorBody  `json:"error"`
			Status statusJSON `json:"status"`
		}{errorBody{Code: "waiting_room", Message: "in the waiting room: POST " + g.cfg.Prefix + "/token to get a place"}, st})
		return
	}
	estimate := "working it out…"
	if !known {
		estimate = "unknown while paused"
	}
	page, err := g.pages.waiting(string(view.State), estimate)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal", "could not render the waiting page")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	ret := template.HTMLEscapeString(g.returnURI(r))
	h.Set("Content-Length", strconv.Itoa(len(page.before)+len(ret)+len(page.after)))
	w.WriteHeader(g.pages.status)
	_, _ = w.Write(page.before)
	_, _ = io.WriteString(w, ret)
	_, _ = w.Write(page.after)
}

// renderedPage is the waiting page rendered for one state and estimate,
// split where the visitor's own return path goes.
type renderedPage struct {
	state, estimate string
	before, after   []byte
}

// returnMark stands in for the return path while rendering; it is plain
// letters, so the template leaves it as it is.
const returnMark = "FAIRGATExRETURNxMARK"

// waiting returns the page for a state and estimate, rendering it only when
// they changed: the template costs more than everything else on this path.
func (p *pages) waiting(state, estimate string) (*renderedPage, error) {
	if cur := p.rendered.Load(); cur != nil && cur.state == state && cur.estimate == estimate {
		return cur, nil
	}
	data := struct {
		Prefix, Assets, Return, State, Estimate string
	}{p.prefix, p.assets, returnMark, state, estimate}
	var buf bytes.Buffer
	if err := waitingTemplate.Execute(&buf, data); err != nil {
		return nil, err
	}
	before, after, ok := bytes.Cut(buf.Bytes(), []byte(returnMark))
	if !ok {
		return nil, fmt.Errorf("waiting page template lost its return mark")
	}
	page := &renderedPage{state: state, estimate: estimate, before: before, after: after}
	p.rendered.Store(page)
	return page, nil
}

func (g *Gateway) serveClosed(w http.ResponseWriter, r *http.Request) {
	if wantsJSON(r) {
		g.writeClosedJSON(w)
		return
	}
	soldOut := g.shared.ClosedReason() == "sold_out"
	body := g.pages.closed
	if soldOut && g.pages.soldOut != nil {
		body = g.pages.soldOut
	}
	if body == nil {
		var buf bytes.Buffer
		_ = closedTemplate.Execute(&buf, struct {
			Assets  string
			SoldOut bool
		}{g.pages.assets, soldOut})
		body = buf.Bytes()
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Retry-After", "60")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write(body)
}

// serveAsset serves an embedded asset at assets/<version>/<name>. The
// current version is immutable; another version gets the current bytes
// without the long cache, so a page from before a release still works.
func serveAsset(w http.ResponseWriter, r *http.Request, rest string) {
	version, name, ok := strings.Cut(rest, "/")
	if !ok || strings.Contains(name, "/") || strings.HasSuffix(name, ".html") {
		writeError(w, http.StatusNotFound, "not_found", "no such asset")
		return
	}
	b, err := assetFS.ReadFile(path.Join("assets", name))
	if err != nil {
		writeError(w, http.StatusNotFound, "not_found", "no such asset")
		return
	}
	h := w.Header()
	h.Set("Content-Type", mime.TypeByExtension(path.Ext(name)))
	h.Set("X-Content-Type-Options", "nosniff")
	if version == assetVersion {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "public, max-age=60")
	}
	h.Set("Content-Length", strconv.Itoa(len(b)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(b)
}
