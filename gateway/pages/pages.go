// Package pages is the visitor pages of the waiting room: the waiting page
// (the default one or the operator's template), the closed and sold-out
// pages, the JSON twins of their text, the embedded assets, and the
// languages they come in. It renders and compresses them; when to show
// which is the gateway's.
package pages

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

	"go.uber.org/zap"

	"github.com/fairgate/fairgate/gateway/compress"
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

// AssetVersion is the assets' version, the path segment after assets/ in
// their URLs.
func AssetVersion() string { return assetVersion }

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
	// gateway/pages/assets/i18n/en.json): {{.T.heading}}. An unknown key
	// fails the config load.
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

// Config is what the pages are built from: the gateway's settled options.
type Config struct {
	// Prefix is where fairgate's endpoints live; the assets are under it.
	Prefix string
	// Room is the room's name.
	Room string
	// WaitingStatus is the waiting page's HTTP status.
	WaitingStatus int
	// Language is the configured language (see Named); nil: each
	// visitor's Accept-Language.
	Language *Locale
	// ClosedPage, SoldOutPage and WaitingPage are the operator's files, if
	// any: the two pages as they are, the waiting page a template.
	ClosedPage, SoldOutPage, WaitingPage string
}

// Pages is the visitor pages of one gateway.
type Pages struct {
	closed, soldOut *compress.Body // custom pages, if configured
	assets          string
	prefix          string
	room            string
	status          int
	forced          *Locale // the configured language, or nil
	waitingTemplate *template.Template
	custom          bool // the template is the operator's
	log             *zap.Logger
	// rendered holds each language's last rendered waiting page.
	rendered []atomic.Pointer[renderedPage]
	// closedPages are the built-in closed pages, per language, closed then sold out.
	closedPages [][2]*compress.Body
}

// New loads the operator's pages and checks the waiting template in every
// language and state, so a template that fails does so now.
func New(s Config, log *zap.Logger) (*Pages, error) {
	p := &Pages{
		assets: s.Prefix + "/assets/" + assetVersion, prefix: s.Prefix, room: s.Room, status: s.WaitingStatus,
		forced: s.Language, waitingTemplate: defaultWaitingTemplate, log: log,
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
		var both [2]*compress.Body
		for i, soldOut := range []bool{false, true} {
			var buf bytes.Buffer
			if err := closedTemplate.Execute(&buf, closedData{Lang: l.name, Dir: l.dir, T: l.text, Stylesheet: p.assets + "/waiting.css", SoldOut: soldOut}); err != nil {
				return nil, fmt.Errorf("closed page (%s): %w", l.name, err)
			}
			eb := compress.Precompress(buf.Bytes(), true)
			both[i] = &eb
		}
		p.closedPages = append(p.closedPages, both)
	}
	return p, nil
}

// readPage reads a page file, compressed once.
func readPage(file string) (*compress.Body, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	eb := compress.Precompress(b, true)
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
func (p *Pages) check() error {
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
func (p *Pages) data(lang int, state string, estSecs float64, known bool, saleStart string) PageData {
	l := pageLanguages.all[lang]
	esc := template.HTMLEscapeString
	script := `<script id="fairgate-text" type="application/json">` + string(l.script) + `</script>` +
		`<script ` + scriptMarker + ` src="` + esc(p.assets) + `/waiting.js" data-prefix="` + esc(p.prefix) +
		`" data-assets="` + esc(p.assets) + `" data-lang="` + l.name + `" data-return="` + ReturnMark + `" defer></script>`
	minutes := 0
	if known {
		minutes = int(math.Round(estSecs / 60))
	}
	return PageData{
		Room: p.room, State: state, Lang: l.name, Dir: l.dir,
		EstimateKnown: known, EstimateMinutes: minutes, Estimate: l.WaitText(estSecs, known),
		SaleStart: saleStart, Message: l.StateMessage(state, "", saleStart), T: l.text,
		Assets: p.assets, Stylesheet: p.assets + "/waiting.css", Script: template.HTML(script),
		Prefix: p.prefix, Return: ReturnMark,
	}
}

type closedData struct {
	Lang, Dir  string
	T          map[string]string
	Stylesheet string
	SoldOut    bool
}

// JSON is the waiting page's text for apps that draw the same screen:
// the JSON answer carries everything the page shows.
type JSON struct {
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

// Wait is what the waiting page shows of the room and the visitor's wait.
type Wait struct {
	// State is the room's state: queue, scheduled or paused.
	State string
	// SaleStart is when the sale starts, RFC 3339 in UTC, while the room
	// is scheduled; "" otherwise.
	SaleStart string
	// Seconds is the wait estimate in whole seconds, when Known.
	Seconds float64
	Known   bool
}

// WaitingJSON is the waiting page's text in l.
func WaitingJSON(l *Locale, w Wait) *JSON {
	return &JSON{
		Lang: l.name, Dir: l.dir, Title: l.t("title"), Heading: l.t("heading"), Lead: l.t("lead"),
		Message: l.StateMessage(w.State, "", w.SaleStart), EstimateLabel: l.t("estimate_label"), Estimate: l.WaitText(w.Seconds, w.Known),
		NextLabel:   l.t("next_label"),
		TipsHeading: l.t("tips_heading"), Tips: []string{l.t("tip_keep_open"), l.t("tip_refresh"), l.t("tip_tabs")},
	}
}

// ClosedJSON is the closed page's text in l, or the sold-out page's.
func ClosedJSON(l *Locale, soldOut bool) *JSON {
	if soldOut {
		return &JSON{Lang: l.name, Dir: l.dir, Title: l.t("sold_out_title"), Heading: l.t("sold_out_title"), Lead: l.t("sold_out_lead"), Message: l.t("status_sold_out")}
	}
	return &JSON{Lang: l.name, Dir: l.dir, Title: l.t("closed_title"), Heading: l.t("closed_title"), Lead: l.t("closed_lead"), Message: l.t("status_closed")}
}

// ServeWaiting writes the waiting page in l for w with ret, the visitor's
// return path (already one the admit redirect accepts), in its place. It
// fails, having written nothing, when the page cannot be rendered.
func (p *Pages) ServeWaiting(w http.ResponseWriter, r *http.Request, l *Locale, wait Wait, ret string) error {
	page, err := p.waiting(l.index, wait.State, wait.Seconds, wait.Known, wait.SaleStart)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	// The return path is spliced in after rendering, escaped for HTML
	// only: it must already be what the admit redirect would accept, as an
	// operator's template may put it in a link.
	ret = template.HTMLEscapeString(ret)
	if page.gz != nil {
		compress.AddVary(h, "Accept-Encoding")
		if gz, _ := compress.AcceptWeights(r); gz > 0 {
			h.Set("Content-Encoding", "gzip")
			h.Set("Content-Length", strconv.Itoa(page.gz.Len(ret)))
			w.WriteHeader(p.status)
			page.gz.Write(w, ret)
			return nil
		}
	}
	size := len(ret) * (len(page.parts) - 1)
	for _, part := range page.parts {
		size += len(part)
	}
	h.Set("Content-Length", strconv.Itoa(size))
	w.WriteHeader(p.status)
	for i, part := range page.parts {
		if i > 0 {
			_, _ = io.WriteString(w, ret)
		}
		_, _ = w.Write(part)
	}
	return nil
}

// renderedPage is the waiting page rendered for one language, state and
// estimate, split where the visitor's own return path goes; and gzipped
// the same way (nil when too small to be worth it). It is sent in gzip
// only: zstd would need one frame per piece.
type renderedPage struct {
	key   pageKey
	parts [][]byte
	gz    *compress.SplicedGzip
}

type pageKey struct {
	state, saleStart string
	minutes          int
	known            bool
}

// ReturnMark stands in for the return path while rendering; it is plain
// letters, so the template leaves it as it is in any context. No page
// that is served holds it.
const ReturnMark = "FAIRGATExRETURNxMARK"

// waiting returns the page for a language, state and estimate, rendering it
// only when they changed: the template costs more than everything else on
// this path. A custom template that fails now (it passed at load) gives
// way to the built-in page, so the visitor still waits.
func (p *Pages) waiting(lang int, state string, estSecs float64, known bool, saleStart string) (*renderedPage, error) {
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
	page := &renderedPage{key: key, parts: bytes.Split(buf.Bytes(), []byte(ReturnMark))}
	if buf.Len() >= compress.MinBytes {
		page.gz = compress.NewSplicedGzip(page.parts)
	}
	p.rendered[lang].Store(page)
	return page, nil
}

// ServeClosed writes the closed page in l, or the sold-out page: the
// operator's if configured, else the built-in one.
func (p *Pages) ServeClosed(w http.ResponseWriter, r *http.Request, l *Locale, soldOut bool) {
	body := p.closed
	if soldOut && p.soldOut != nil {
		body = p.soldOut
	}
	if body == nil {
		body = p.closedPages[l.index][0]
		if soldOut {
			body = p.closedPages[l.index][1]
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Retry-After", "60")
	b, enc := body.Pick(r)
	compress.SetEncoding(h, enc, body.Compressed(), len(b))
	w.WriteHeader(http.StatusServiceUnavailable)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b)
	}
}

// ServeAsset serves an embedded asset at assets/<version>/<name>, rest
// being <version>/<name>. The current version is immutable; another
// version gets the current bytes without the long cache, so a page from
// before a release still works. It writes nothing and returns false when
// there is no such asset.
func ServeAsset(w http.ResponseWriter, r *http.Request, rest string) bool {
	version, name, ok := strings.Cut(rest, "/")
	if !ok || strings.Contains(name, "/") || strings.HasSuffix(name, ".html") {
		return false
	}
	eb, ok := assetBodies()[name]
	if !ok {
		return false
	}
	h := w.Header()
	h.Set("Content-Type", mime.TypeByExtension(path.Ext(name)))
	h.Set("X-Content-Type-Options", "nosniff")
	if version == assetVersion {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "public, max-age=60")
	}
	b, enc := eb.Pick(r)
	compress.SetEncoding(h, enc, eb.Compressed(), len(b))
	if r.Method != http.MethodHead {
		_, _ = w.Write(b)
	}
	return true
}

// assetBodies are the embedded assets, each compressed once.
var assetBodies = sync.OnceValue(func() map[string]*compress.Body {
	bodies := map[string]*compress.Body{}
	entries, _ := assetFS.ReadDir("assets") // embedded: cannot fail
	for _, e := range entries {
		if e.IsDir() || strings.HasSuffix(e.Name(), ".html") {
			continue
		}
		b, _ := assetFS.ReadFile("assets/" + e.Name())
		eb := compress.Precompress(b, true)
		bodies[e.Name()] = &eb
	}
	return bodies
})
