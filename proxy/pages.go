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
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/fairgate/fairgate/admission"
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
	defaultWaitingTemplate = template.Must(template.New("waiting.html").Option("missingkey=error").ParseFS(assetFS, "assets/waiting.html"))
	closedTemplate         = template.Must(template.New("closed.html").Option("missingkey=error").ParseFS(assetFS, "assets/closed.html"))
)

// PageData is what a waiting page template (`waiting_page`) is executed
// with. docs/WAITING_PAGE.md documents it for operators, with examples.
type PageData struct {
	// Room is the room's name.
	Room string
	// State is the room's state: queue, scheduled or paused (an open room
	// shows no waiting page, a closed one the closed page).
	State string
	// Lang is the page's language tag (e.g. "de") and Dir its direction,
	// "ltr" or "rtl", for <html lang dir>.
	Lang, Dir string
	// EstimateKnown says whether there is a wait estimate (there is none
	// while paused); EstimateMinutes is it in whole minutes and Estimate in
	// words, in the page's language. The script keeps #fg-estimate current.
	EstimateKnown   bool
	EstimateMinutes int
	Estimate        string
	// SaleStart is when the sale starts, RFC 3339 in UTC, while the room
	// is scheduled; "" otherwise.
	// The script shows it in the visitor's time zone in any
	// <time data-fg-local> element.
	SaleStart string
	// Message is the status line for the state, in the page's language;
	// the script keeps #fg-state current (turn, closing, errors).
	Message string
	// T is all of the page's text in its language, by key (see
	// proxy/assets/i18n/en.json): {{.T.heading}}. An unknown key fails the
	// config load.
	T map[string]string
	// Assets is the URL of fairgate's assets, Stylesheet the default
	// stylesheet's URL within it.
	Assets, Stylesheet string
	// Script is the one tag a waiting page must contain: fairgate's
	// waiting script with its settings and text.
	Script template.HTML
	// Prefix is where fairgate's endpoints live (default /_fairgate).
	Prefix string
	// Return is the path the visitor asked for, where they go once
	// admitted, as the admit redirect takes it: a path on this site, "/"
	// for one that could lead elsewhere; for HTML text and attributes.
	Return string
}

type pages struct {
	closed, soldOut *encodedBody // custom pages, if configured
	assets          string
	prefix          string
	room            string
	status          int
	forced          int // index of the configured language, or -1
	waitingTemplate *template.Template
	custom          bool // the template is the operator's
	log             *zap.Logger
	// rendered holds each language's last rendered waiting page.
	rendered []atomic.Pointer[renderedPage]
	// closedPages are the built-in closed pages, per language, closed then sold out.
	closedPages [][2]*encodedBody
}

func newPages(s settings, log *zap.Logger) (*pages, error) {
	p := &pages{
		assets: s.Prefix + "/assets/" + assetVersion, prefix: s.Prefix, room: s.Room, status: s.WaitingStatus,
		forced: s.language, waitingTemplate: defaultWaitingTemplate, log: log,
		rendered: make([]atomic.Pointer[renderedPage], len(pageLanguages.all)),
	}
	var err error
	if s.ClosedPage != "" {
		if p.closed, err = readPage(s.ClosedPage); err != nil {
			return nil, fmt.Errorf("closed_page: %w", err)
		}
	}
	if s.SoldOutPage != "" {
		if p.soldOut, err = readPage(s.SoldOutPage); err != nil {
			return nil, fmt.Errorf("sold_out_page: %w", err)
		}
	}
	if s.WaitingPage != "" {
		if p.waitingTemplate, err = loadWaitingTemplate(s.WaitingPage); err != nil {
			return nil, err
		}
		p.custom = true
	}
	if err := p.check(); err != nil {
		if s.WaitingPage != "" {
			return nil, fmt.Errorf("waiting_page %s: %w", s.WaitingPage, err)
		}
		return nil, err
	}
	for _, l := range pageLanguages.all {
		var both [2]*encodedBody
		for i, soldOut := range []bool{false, true} {
			var buf bytes.Buffer
			if err := closedTemplate.Execute(&buf, closedData{Lang: l.name, Dir: l.dir, T: l.text, Stylesheet: p.assets + "/waiting.css", SoldOut: soldOut}); err != nil {
				return nil, fmt.Errorf("closed page (%s): %w", l.name, err)
			}
			eb := precompress(buf.Bytes(), true)
			both[i] = &eb
		}
		p.closedPages = append(p.closedPages, both)
	}
	return p, nil
}

// readPage reads a page file, compressed once.
func readPage(file string) (*encodedBody, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	eb := precompress(b, true)
	return &eb, nil
}

// loadWaitingTemplate parses an operator's waiting page. Parse errors
// name the file and line ("template: page.html:12: ...").
func loadWaitingTemplate(file string) (*template.Template, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("waiting_page: %w", err)
	}
	t, err := template.New(filepath.Base(file)).Option("missingkey=error").Parse(string(b))
	if err != nil {
		return nil, fmt.Errorf("waiting_page %s: %w", file, err)
	}
	return t, nil
}

// scriptMarker is in the script tag, so check can see a page has it.
const scriptMarker = `id="fairgate-script"`

// check executes the waiting template against sample data in every
// language, state and estimate, so a template that fails does so when the
// config loads, not on a visitor's request; and it must include the script.
func (p *pages) check() error {
	for i := range pageLanguages.all {
		for _, state := range []string{"queue", "scheduled", "paused"} {
			for _, known := range []bool{true, false} {
				var buf bytes.Buffer
				saleStart := "" // as served: a sale start only while scheduled
				if state == "scheduled" {
					saleStart = "2031-03-09T12:00:00Z"
				}
				data := p.data(i, state, 754, known, saleStart)
				if err := p.waitingTemplate.Execute(&buf, data); err != nil {
					return err
				}
				if !bytes.Contains(buf.Bytes(), []byte(scriptMarker)) {
					return fmt.Errorf("the page must include {{.Script}}, fairgate's script tag")
				}
			}
		}
	}
	return nil
}

// data is the template data for a language, state and estimate; Return is
// the mark the visitor's path replaces.
func (p *pages) data(lang int, state string, estSecs float64, known bool, saleStart string) PageData {
	l := pageLanguages.all[lang]
	esc := template.HTMLEscapeString
	script := `<script id="fairgate-text" type="application/json">` + string(l.script) + `</script>` +
		`<script ` + scriptMarker + ` src="` + esc(p.assets) + `/waiting.js" data-prefix="` + esc(p.prefix) +
		`" data-assets="` + esc(p.assets) + `" data-lang="` + l.name + `" data-return="` + returnMark + `" defer></script>`
	minutes := 0
	if known {
		minutes = int(math.Round(estSecs / 60))
	}
	return PageData{
		Room: p.room, State: state, Lang: l.name, Dir: l.dir,
		EstimateKnown: known, EstimateMinutes: minutes, Estimate: l.waitText(estSecs, known),
		SaleStart: saleStart, Message: l.stateMessage(state, "", saleStart), T: l.text,
		Assets: p.assets, Stylesheet: p.assets + "/waiting.css", Script: template.HTML(script),
		Prefix: p.prefix, Return: returnMark,
	}
}

type closedData struct {
	Lang, Dir  string
	T          map[string]string
	Stylesheet string
	SoldOut    bool
}

func wantsJSON(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	return strings.Contains(accept, "application/json") && !strings.Contains(accept, "text/html")
}

// pageJSON is the waiting page's text for apps that draw the same screen:
// the JSON answer carries everything the page shows.
type pageJSON struct {
	Lang          string   `json:"lang"`
	Dir           string   `json:"dir"`
	Title         string   `json:"title"`
	Heading       string   `json:"heading"`
	Lead          string   `json:"lead"`
	Message       string   `json:"message"`
	EstimateLabel string   `json:"estimate_label,omitempty"`
	Estimate      string   `json:"estimate,omitempty"`
	NextLabel     string   `json:"next_label,omitempty"`
	TipsHeading   string   `json:"tips_heading,omitempty"`
	Tips          []string `json:"tips,omitempty"`
}

func waitingPageJSON(l *locale, state, saleStart string, estSecs float64, known bool) *pageJSON {
	return &pageJSON{
		Lang: l.name, Dir: l.dir, Title: l.t("title"), Heading: l.t("heading"), Lead: l.t("lead"),
		Message: l.stateMessage(state, "", saleStart), EstimateLabel: l.t("estimate_label"), Estimate: l.waitText(estSecs, known),
		NextLabel:   l.t("next_label"),
		TipsHeading: l.t("tips_heading"), Tips: []string{l.t("tip_keep_open"), l.t("tip_refresh"), l.t("tip_tabs")},
	}
}

func closedPageJSON(l *locale, soldOut bool) *pageJSON {
	if soldOut {
		return &pageJSON{Lang: l.name, Dir: l.dir, Title: l.t("sold_out_title"), Heading: l.t("sold_out_title"), Lead: l.t("sold_out_lead"), Message: l.t("status_sold_out")}
	}
	return &pageJSON{Lang: l.name, Dir: l.dir, Title: l.t("closed_title"), Heading: l.t("closed_title"), Lead: l.t("closed_lead"), Message: l.t("status_closed")}
}

// serveWaiting answers a protected request without a pass: the waiting
// page for browsers, a JSON 429 for apps.
func (g *Gateway) serveWaiting(w http.ResponseWriter, r *http.Request, now time.Time) {
	// The estimate is the visitor's lane's (the default lane's without a
	// login); a refused login is answered when the page asks for a token.
	lane := ""
	if _, l, err := g.visitor(r, now); err == nil {
		lane = l
	}
	view := g.door.View(lane, now)
	est, known := view.EstimateWait(now)
	secs := math.Round(est.Seconds())
	lang, varies := g.pages.localeFor(r)
	if varies {
		w.Header().Add("Vary", "Accept-Language")
	}
	saleStart := ""
	if view.State == admission.StateScheduled && !view.SaleStart.IsZero() {
		saleStart = view.SaleStart.UTC().Format(time.RFC3339)
	}
	if wantsJSON(r) {
		st := statusJSON{Room: view.Name, State: string(view.State), Rate: view.Rate, SaleStart: saleStart, EstimateKnown: known}
		if known {
			st.EstimateSeconds = &secs
		}
		w.Header().Set("Retry-After", strconv.Itoa(int(time.Duration(g.cfg.MinBackoff).Seconds())))
		w.Header().Set("Link", fmt.Sprintf(`<%s/token>; rel="fairgate-token"`, g.cfg.Prefix))
		writeJSON(w, http.StatusTooManyRequests, struct {
			Error  errorBody  `json:"error"`
			Status statusJSON `json:"status"`
			Page   *pageJSON  `json:"page"`
		}{errorBody{Code: "waiting_room", Message: "in the waiting room: POST " + g.cfg.Prefix + "/token to get a place"}, st,
			waitingPageJSON(pageLanguages.all[lang], string(view.State), saleStart, secs, known)})
		return
	}
	page, err := g.pages.waiting(lang, string(view.State), secs, known, saleStart)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal", "could not render the waiting page")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	// The return path is spliced in after rendering, escaped for HTML
	// only: it must already be what the admit redirect would accept, as an
	// operator's template may put it in a link.
	ret := template.HTMLEscapeString(safeReturn(g.returnURI(r)))
	if page.gz != nil {
		addVary(h, "Accept-Encoding")
		if gz, _ := acceptWeights(r); gz > 0 {
			h.Set("Content-Encoding", "gzip")
			h.Set("Content-Length", strconv.Itoa(page.gz.compressedLen(ret)))
			w.WriteHeader(g.pages.status)
			page.gz.write(w, ret)
			return
		}
	}
	size := len(ret) * (len(page.parts) - 1)
	for _, part := range page.parts {
		size += len(part)
	}
	h.Set("Content-Length", strconv.Itoa(size))
	w.WriteHeader(g.pages.status)
	for i, part := range page.parts {
		if i > 0 {
			_, _ = io.WriteString(w, ret)
		}
		_, _ = w.Write(part)
	}
}

// renderedPage is the waiting page rendered for one language, state and
// estimate, split where the visitor's own return path goes; and gzipped
// the same way (nil when too small to be worth it). It is sent in gzip
// only: zstd would need one frame per piece.
type renderedPage struct {
	key   pageKey
	parts [][]byte
	gz    *splicedGzip
}

type pageKey struct {
	state, saleStart string
	minutes          int
	known            bool
}

// returnMark stands in for the return path while rendering; it is plain
// letters, so the template leaves it as it is in any context.
const returnMark = "FAIRGATExRETURNxMARK"

// waiting returns the page for a language, state and estimate, rendering it
// only when they changed: the template costs more than everything else on
// this path. A custom template that fails now (it passed at load) gives
// way to the built-in page, so the visitor still waits.
func (p *pages) waiting(lang int, state string, estSecs float64, known bool, saleStart string) (*renderedPage, error) {
	key := pageKey{state: state, saleStart: saleStart, known: known}
	if known {
		key.minutes = int(math.Round(estSecs / 60))
	}
	if cur := p.rendered[lang].Load(); cur != nil && cur.key == key {
		return cur, nil
	}
	data := p.data(lang, state, estSecs, known, saleStart)
	var buf bytes.Buffer
	err := p.waitingTemplate.Execute(&buf, data)
	if err != nil && p.custom {
		p.log.Error("waiting_page failed; serving the built-in page", zap.Error(err))
		buf.Reset()
		err = defaultWaitingTemplate.Execute(&buf, data)
	}
	if err != nil {
		return nil, err
	}
	page := &renderedPage{key: key, parts: bytes.Split(buf.Bytes(), []byte(returnMark))}
	if buf.Len() >= minCompressBytes {
		page.gz = newSplicedGzip(page.parts)
	}
	p.rendered[lang].Store(page)
	return page, nil
}

func (g *Gateway) serveClosed(w http.ResponseWriter, r *http.Request) {
	lang, varies := g.pages.localeFor(r)
	if varies {
		w.Header().Add("Vary", "Accept-Language")
	}
	if wantsJSON(r) {
		g.writeClosedJSON(w, r)
		return
	}
	soldOut := g.shared.ClosedReason() == "sold_out"
	body := g.pages.closed
	if soldOut && g.pages.soldOut != nil {
		body = g.pages.soldOut
	}
	if body == nil {
		body = g.pages.closedPages[lang][0]
		if soldOut {
			body = g.pages.closedPages[lang][1]
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Retry-After", "60")
	b, enc := body.pick(r)
	setEncoding(h, enc, body.compressed(), len(b))
	w.WriteHeader(http.StatusServiceUnavailable)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b)
	}
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
	eb, ok := assetBodies()[name]
	if !ok {
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
	b, enc := eb.pick(r)
	setEncoding(h, enc, eb.compressed(), len(b))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(b)
}

// assetBodies are the embedded assets, each compressed once.
var assetBodies = sync.OnceValue(func() map[string]*encodedBody {
	bodies := map[string]*encodedBody{}
	entries, _ := assetFS.ReadDir("assets") // embedded: cannot fail
	for _, e := range entries {
		if e.IsDir() || strings.HasSuffix(e.Name(), ".html") {
			continue
		}
		b, _ := assetFS.ReadFile("assets/" + e.Name())
		eb := precompress(b, true)
		bodies[e.Name()] = &eb
	}
	return bodies
})
