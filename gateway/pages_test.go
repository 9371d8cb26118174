package gateway

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairgate/fairgate/gateway/pages"
	"github.com/fairgate/fairgate/room"
)

func writeTemplate(t *testing.T, body string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "page.html")
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func newGatewayErr(cfg Config) error {
	cfg.Keys = testKeys
	shared, err := NewShared(cfg, newFakeClock().Now)
	if err != nil {
		return err
	}
	gw, err := New(cfg, shared, Options{})
	if err == nil {
		gw.Close()
	}
	return err
}

// TestWaitingPageBrokenTemplateFailsLoad: a template that cannot parse or
// cannot execute fails the config with its file and line, before any
// visitor sees it.
func TestWaitingPageBrokenTemplateFailsLoad(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"parse", "<p>\n{{.Room}\n{{.Script}}", []string{"page.html:2"}},
		{"unknown field", "<p>\n\n{{.Nope}}{{.Script}}", []string{"page.html:3", "Nope"}},
		{"unknown text key", "{{.Script}}\n{{.T.no_such_key}}", []string{"page.html:2", "no_such_key"}},
		{"branch by state", "{{.Script}}\n{{if eq .State \"paused\"}}{{.Oops}}{{end}}", []string{"page.html:2", "Oops"}},
		{"branch without a sale start", "{{.Script}}\n{{if .SaleStart}}ok{{else}}{{.T.nope}}{{end}}", []string{"page.html:2", "nope"}},
		{"branch by language", "{{.Script}}\n{{if eq .Dir \"rtl\"}}{{.Rtl}}{{end}}", []string{"page.html:2", "Rtl"}},
		{"no script", "<p>{{.T.heading}}</p>", []string{"{{.Script}}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeTemplate(t, tc.body)
			err := newGatewayErr(Config{WaitingPage: file})
			if err == nil {
				t.Fatal("a broken template was accepted")
			}
			for _, want := range append(tc.want, file) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
	if err := newGatewayErr(Config{WaitingPage: filepath.Join(t.TempDir(), "missing.html")}); err == nil || !strings.Contains(err.Error(), "waiting_page") {
		t.Fatalf("a missing template: %v", err)
	}
}

// TestDocsExampleTemplatesLoad: the examples in docs/ are valid templates.
func TestDocsExampleTemplatesLoad(t *testing.T) {
	files, _ := filepath.Glob("../docs/examples/waiting-*.html")
	if len(files) < 2 {
		t.Fatalf("want two example templates in docs/examples, have %v", files)
	}
	for _, file := range files {
		if err := newGatewayErr(Config{WaitingPage: file}); err != nil {
			t.Errorf("%s: %v", file, err)
		}
	}
}

func TestCustomWaitingPage(t *testing.T) {
	file := writeTemplate(t, `<!doctype html><html lang="{{.Lang}}" dir="{{.Dir}}"><title>{{.Room}} – {{.T.title}}</title>
<h1 class="brand">{{.T.heading}}</h1>
<p>state={{.State}} known={{.EstimateKnown}} minutes={{.EstimateMinutes}} estimate={{.Estimate}}</p>
<p id="fg-state" role="status">{{.Message}}</p>
<a href="{{.Return}}">back</a> <span>{{.Return}}</span>
<link rel="stylesheet" href="{{.Stylesheet}}">
{{.Script}}`)
	e := newEnv(t, Config{Config: room.Config{Room: "drop", Tau: Duration(3 * time.Minute), FixedSpeed: true}, WaitingPage: file}, nil)
	resp, body := e.do("GET", "/tickets?a=1&b=<x>", "", "Accept", "text/html", "Accept-Language", "fr-CH, en;q=0.5")
	page := string(body)
	if resp.StatusCode != 200 || resp.Header.Get("Vary") != "Accept-Language" {
		t.Fatalf("custom page: %d %v", resp.StatusCode, resp.Header)
	}
	for _, want := range []string{
		`<html lang="fr" dir="ltr">`, "<title>drop – Vous êtes dans la file</title>", "state=queue known=true",
		"minutes=3", "estimate=environ 3 min", "Vous êtes dans la file. Cette page",
		`<a href="/tickets?a=1&amp;b=&lt;x&gt;">`, `<span>/tickets?a=1&amp;b=&lt;x&gt;</span>`,
		`data-return="/tickets?a=1&amp;b=&lt;x&gt;"`, `data-lang="fr"`, `src="/_fairgate/assets/` + pages.AssetVersion() + `/waiting.js"`,
		`<script id="fairgate-text" type="application/json">{`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, pages.ReturnMark) {
		t.Fatal("the return mark leaked")
	}
	if resp.Header.Get("Content-Length") != "" && resp.ContentLength != int64(len(body)) {
		t.Fatalf("Content-Length %d for %d bytes", resp.ContentLength, len(body))
	}
}

func TestWaitingPageLanguages(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale"}}, nil)
	for _, tc := range []struct{ accept, lang, dir, heading string }{
		{"", "en", "ltr", "You're in the waiting room"},
		{"de-DE,de;q=0.9,en;q=0.8", "de", "ltr", "Sie sind im Warteraum"},
		{"ja", "ja", "ltr", "待合室にいます"},
		{"pt-BR", "pt", "ltr", "Você está na sala de espera"},
		{"nl-BE;q=0.8, zz;q=0.9", "nl", "ltr", "Je bent in de wachtkamer"},
		{"ar-EG", "ar", "rtl", "أنت في غرفة الانتظار"},
		{"zh-CN", "en", "ltr", "You're in the waiting room"},
		{"garbage;;;q=x", "en", "ltr", "You're in the waiting room"},
	} {
		resp, body := e.do("GET", "/", "", "Accept", "text/html", "Accept-Language", tc.accept)
		page := string(body)
		if !strings.Contains(page, `<html lang="`+tc.lang+`" dir="`+tc.dir+`">`) || !strings.Contains(page, tc.heading) {
			t.Errorf("Accept-Language %q: want %s %s %q, got %.400s", tc.accept, tc.lang, tc.dir, tc.heading, page)
		}
		if resp.Header.Get("Vary") != "Accept-Language" {
			t.Errorf("Accept-Language %q: Vary %q", tc.accept, resp.Header.Get("Vary"))
		}
	}

	forced := newEnv(t, Config{Config: room.Config{Room: "sale"}, Language: "it"}, nil)
	resp, body := forced.do("GET", "/", "", "Accept", "text/html", "Accept-Language", "de")
	if !strings.Contains(string(body), `<html lang="it"`) || strings.Contains(strings.Join(resp.Header.Values("Vary"), ","), "Accept-Language") {
		t.Fatalf("forced language: Vary %q, %.200s", resp.Header.Values("Vary"), body)
	}
	if err := newGatewayErr(Config{Language: "de-CH"}); err != nil {
		t.Fatalf("de-CH: %v", err)
	}
	for _, bad := range []string{"xx", "zh", "not a tag"} {
		if err := newGatewayErr(Config{Language: bad}); err == nil || !strings.Contains(err.Error(), "language") {
			t.Errorf("language %q accepted: %v", bad, err)
		}
	}
}

func TestClosedPagesLanguages(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "closed"}}, nil)
	_, body := e.do("GET", "/", "", "Accept", "text/html", "Accept-Language", "es")
	if !strings.Contains(string(body), "Cerrado por ahora") || !strings.Contains(string(body), `lang="es"`) {
		t.Fatalf("closed in Spanish: %s", body)
	}
	closed, soldOut := "closed", "sold_out"
	if err := e.gw.Room().Apply(room.RoomChange{State: &closed, Reason: &soldOut}, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	resp, body := e.do("GET", "/", "", "Accept", "text/html", "Accept-Language", "ar")
	if resp.StatusCode != 503 || !strings.Contains(string(body), "نفدت الكمية") || !strings.Contains(string(body), `dir="rtl"`) {
		t.Fatalf("sold out in Arabic: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do("GET", "/", "", "Accept", "application/json", "Accept-Language", "nl")
	var got struct {
		Error struct{ Code, Reason string }
		Page  pages.JSON
	}
	if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != 503 {
		t.Fatalf("closed JSON: %d %s", resp.StatusCode, body)
	}
	if got.Error.Reason != "sold_out" || got.Page.Lang != "nl" || got.Page.Heading != "Uitverkocht" || got.Page.Lead == "" {
		t.Fatalf("closed JSON: %+v", got)
	}
}

// TestJSONParity: the JSON answers carry what the waiting page shows, in
// the same language.
func TestJSONParity(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale", Tau: Duration(3 * time.Minute), FixedSpeed: true}}, nil)
	resp, body := e.do("GET", "/shop", "", "Accept", "application/json", "Accept-Language", "de")
	var waiting struct {
		Status statusJSON
		Page   pages.JSON
	}
	if err := json.Unmarshal(body, &waiting); err != nil || resp.StatusCode != 429 {
		t.Fatalf("waiting JSON: %d %s", resp.StatusCode, body)
	}
	de := pages.Choose("de")
	p := waiting.Page
	if p.Lang != "de" || p.Title != de.Text("title") || p.Heading != de.Text("heading") || p.Lead != de.Text("lead") ||
		p.Message != de.Text("status_queue") || p.Estimate != "etwa 3 Min." || p.EstimateLabel != de.Text("estimate_label") || p.NextLabel == "" || p.TipsHeading == "" || len(p.Tips) != 3 {
		t.Fatalf("page JSON: %+v", p)
	}
	if !waiting.Status.EstimateKnown || waiting.Status.EstimateSeconds == nil {
		t.Fatalf("status JSON: %+v", waiting.Status)
	}
	_, html := e.do("GET", "/shop", "", "Accept", "text/html", "Accept-Language", "de")
	for _, s := range append([]string{p.Title, p.Heading, p.Lead, p.Message, p.Estimate, p.EstimateLabel, p.NextLabel, p.TipsHeading}, p.Tips...) {
		if !strings.Contains(string(html), s) {
			t.Errorf("the page lacks JSON's %q", s)
		}
	}

	resp, body = e.do("POST", "/_fairgate/token", "", "Accept-Language", "ja")
	var tk ticketJSON
	if err := json.Unmarshal(body, &tk); err != nil || resp.StatusCode != 200 {
		t.Fatalf("token: %d %s", resp.StatusCode, body)
	}
	if tk.Lang != "ja" || tk.Message != "列に並んでいます。このページが自動的にご案内します。" || !tk.EstimateKnown || tk.Estimate == "" {
		t.Fatalf("ticket JSON: %+v", tk)
	}
}

// TestWaitingPageStates: the template sees the state, its message, the
// sale start only while scheduled, and no estimate while paused.
func TestWaitingPageStates(t *testing.T) {
	file := writeTemplate(t, `{{.State}}|{{.SaleStart}}|{{.EstimateKnown}}|{{.Estimate}}|{{.Message}}{{.Script}}`)
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "scheduled", SaleStart: "2031-03-09T13:00:00Z"}, WaitingPage: file}, nil)
	_, body := e.do("GET", "/", "", "Accept", "text/html")
	if want := "scheduled|2031-03-09T13:00:00Z|"; !strings.HasPrefix(string(body), want) || !strings.Contains(string(body), "At the start (2031-03-09 13:00 UTC)") {
		t.Fatalf("scheduled: %.300s", body)
	}
	paused := "paused"
	if err := e.gw.Room().Apply(room.RoomChange{State: &paused}, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	_, body = e.do("GET", "/", "", "Accept", "text/html", "Accept-Language", "es")
	if want := "paused||false|desconocida durante la pausa|La venta está en pausa."; !strings.HasPrefix(string(body), want) {
		t.Fatalf("paused: want %q, got %.300s", want, body)
	}
}

func TestAssets(t *testing.T) {
	e := newEnv(t, Config{Config: room.Config{Room: "sale"}}, nil)
	resp, body := e.do("GET", "/_fairgate/assets/"+pages.AssetVersion()+"/waiting.js", "")
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Cache-Control"), "immutable") || !strings.Contains(string(body), "fairgate") {
		t.Fatalf("asset: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, _ := e.do("GET", "/_fairgate/assets/x/../../etc/passwd", ""); resp.StatusCode != 400 {
		t.Errorf("a dot segment: %d", resp.StatusCode)
	}
	for _, p := range []string{"/_fairgate/assets/" + pages.AssetVersion() + "/waiting.html", "/_fairgate/nope"} {
		if resp, _ := e.do("GET", p, ""); resp.StatusCode != 404 {
			t.Errorf("%s: %d", p, resp.StatusCode)
		}
	}
}

// TestWaitingPageCompressed: the waiting page, the closed page and the
// assets go out compressed when the client accepts it, with Vary, and
// decode to what a client without compression gets.
func TestWaitingPageCompressed(t *testing.T) {
	closedPage := filepath.Join(t.TempDir(), "closed.html")
	if err := os.WriteFile(closedPage, []byte("<!doctype html><title>Closed</title>"+strings.Repeat("<p>The sale has closed.</p>", 40)), 0o600); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, Config{Config: room.Config{Room: "sale", State: "queue"}, ClosedPage: closedPage}, nil)
	// (Go's client asks for gzip and decodes it unless told otherwise.)
	plain, body := e.do("GET", "/shop/seats?a=1&b=<2>", "", "Accept", "text/html", "Accept-Encoding", "identity")
	if plain.StatusCode != 200 || plain.Header.Get("Content-Encoding") != "" || !varies(plain) {
		t.Fatalf("without Accept-Encoding: %d %q, Vary %q", plain.StatusCode, plain.Header.Get("Content-Encoding"), plain.Header.Values("Vary"))
	}
	for _, ae := range []string{"gzip", "gzip, deflate, br, zstd"} {
		resp, gz := e.do("GET", "/shop/seats?a=1&b=<2>", "", "Accept", "text/html", "Accept-Encoding", ae)
		if resp.Header.Get("Content-Encoding") != "gzip" || !varies(resp) {
			t.Fatalf("%q: Content-Encoding %q, Vary %q", ae, resp.Header.Get("Content-Encoding"), resp.Header.Values("Vary"))
		}
		if got := decode(t, "gzip", gz); !bytes.Equal(got, body) {
			t.Fatalf("%q: the gzipped page differs from the plain one", ae)
		}
		if !bytes.Contains(body, []byte("/shop/seats?a=1&amp;b=&lt;2&gt;")) {
			t.Fatalf("the return path is not in the page: %.300s", body)
		}
		t.Logf("waiting page: %d bytes plain, %d gzip", len(body), len(gz))
	}

	// Assets: zstd preferred, gzip, or plain.
	_, js := e.do("GET", "/_fairgate/assets/"+pages.AssetVersion()+"/waiting.js", "", "Accept-Encoding", "identity")
	for _, tc := range []struct{ ae, want string }{{"gzip, zstd", "zstd"}, {"gzip", "gzip"}, {"br", ""}} {
		resp, b := e.do("GET", "/_fairgate/assets/"+pages.AssetVersion()+"/waiting.js", "", "Accept-Encoding", tc.ae)
		if resp.Header.Get("Content-Encoding") != tc.want {
			t.Fatalf("asset with %q: Content-Encoding %q", tc.ae, resp.Header.Get("Content-Encoding"))
		}
		if !bytes.Equal(decode(t, tc.want, b), js) {
			t.Fatalf("asset with %q decodes to other bytes", tc.ae)
		}
	}

	// The closed page (the built-in one is under 512 bytes: sent as it is).
	closed := "closed"
	_ = e.gw.Room().Apply(room.RoomChange{State: &closed}, e.clock.Now())
	_, page := e.do("GET", "/shop", "", "Accept", "text/html", "Accept-Encoding", "identity")
	resp, z := e.do("GET", "/shop", "", "Accept", "text/html", "Accept-Encoding", "zstd")
	if resp.StatusCode != 503 || resp.Header.Get("Content-Encoding") != "zstd" || !bytes.Equal(decode(t, "zstd", z), page) {
		t.Fatalf("closed page: %d %q", resp.StatusCode, resp.Header.Get("Content-Encoding"))
	}
}
