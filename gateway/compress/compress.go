package compress

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// The room answers before Caddy's `encode` handler runs (and `fairgate
// proxy` has none), so what it serves from memory — the waiting page, the
// closed pages, its assets, cached answers — it compresses itself, once:
// each body is kept in the encodings worth sending, and a request gets the
// one its Accept-Encoding prefers (zstd, then gzip), with Vary:
// Accept-Encoding. Small JSON answers are sent as they are.

// MinBytes is the smallest body worth compressing (Caddy's
// `encode` default, minimum_length 512).
const MinBytes = 512

// Encoding is a content coding the room sends.
type Encoding int

const (
	Identity Encoding = iota
	Gzip
	Zstd
)

func (e Encoding) String() string {
	switch e {
	case Gzip:
		return "gzip"
	case Zstd:
		return "zstd"
	}
	return ""
}

// AcceptWeights is the weight r's Accept-Encoding gives gzip and zstd
// (0: not acceptable), with `*` standing for codings not named.
func AcceptWeights(r *http.Request) (gz, zst float64) {
	named := map[string]float64{}
	for _, v := range r.Header.Values("Accept-Encoding") {
		for _, item := range strings.Split(v, ",") {
			name, params, _ := strings.Cut(strings.TrimSpace(item), ";")
			weight := 1.0
			if k, val, ok := strings.Cut(strings.TrimSpace(params), "="); ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
				if err != nil {
					continue
				}
				weight = f
			}
			name = strings.ToLower(strings.TrimSpace(name))
			if name == "x-gzip" {
				name = "gzip"
			}
			named[name] = max(named[name], weight)
		}
	}
	weight := func(name string) float64 {
		if w, ok := named[name]; ok {
			return w
		}
		return named["*"]
	}
	return weight("gzip"), weight("zstd")
}

var (
	// zstd encoders are safe for concurrent EncodeAll.
	zstdBest    = mustZstd(zstd.SpeedBestCompression)
	zstdDefault = mustZstd(zstd.SpeedDefault)
)

func mustZstd(level zstd.EncoderLevel) *zstd.Encoder {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true))
	if err != nil {
		panic("zstd encoder: " + err.Error()) // options are constants
	}
	return enc
}

// Body is a body kept in each encoding worth sending.
type Body struct {
	raw  []byte
	gzip []byte // nil: sent as it is
	zstd []byte
}

// Plain is b kept as it is: a body that must not be compressed.
func Plain(b []byte) Body { return Body{raw: b} }

// Precompress keeps b compressed when it is worth it; best spends more
// time for bodies compressed once per process.
func Precompress(b []byte, best bool) Body {
	eb := Body{raw: b}
	if len(b) < MinBytes {
		return eb
	}
	level, zenc := gzip.DefaultCompression, zstdDefault
	if best {
		level, zenc = gzip.BestCompression, zstdBest
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, level) // level is a constant
	_, _ = zw.Write(b)
	_ = zw.Close()
	if buf.Len() < len(b) {
		eb.gzip = buf.Bytes()
	}
	if z := zenc.EncodeAll(b, nil); len(z) < len(b) {
		eb.zstd = z
	}
	return eb
}

// pick is the body and coding for r: the acceptable coding of highest
// weight the body has (zstd on a tie), else the body as it is.
func (eb *Body) Pick(r *http.Request) ([]byte, Encoding) {
	if !eb.Compressed() {
		return eb.raw, Identity
	}
	gz, zst := AcceptWeights(r)
	if eb.zstd == nil {
		zst = 0
	}
	if eb.gzip == nil {
		gz = 0
	}
	switch {
	case zst > 0 && zst >= gz:
		return eb.zstd, Zstd
	case gz > 0:
		return eb.gzip, Gzip
	}
	return eb.raw, Identity
}

func (eb *Body) Compressed() bool { return eb.gzip != nil || eb.zstd != nil }

// Size is the bytes the body holds in all its encodings.
func (eb *Body) Size() int { return len(eb.raw) + len(eb.gzip) + len(eb.zstd) }

// SetEncoding sets the headers of a body sent in coding e: Content-Encoding,
// Content-Length, and Vary when the body has other codings.
func SetEncoding(h http.Header, e Encoding, varies bool, n int) {
	if varies {
		AddVary(h, "Accept-Encoding")
	}
	if e != Identity {
		h.Set("Content-Encoding", e.String())
	}
	h.Set("Content-Length", strconv.Itoa(n))
}

// AddVary adds field to Vary unless it is there.
func AddVary(h http.Header, field string) {
	for _, v := range h.Values("Vary") {
		for _, f := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), field) {
				return
			}
		}
	}
	h.Add("Vary", field)
}

// Compressible says whether an answer may be compressed: a type that
// compresses, not already encoded, not marked no-transform, not a range.
func Compressible(status int, h http.Header) bool {
	if status == http.StatusPartialContent || status == http.StatusNoContent || status == http.StatusNotModified {
		return false
	}
	if h.Get("Content-Encoding") != "" || h.Get("Content-Range") != "" ||
		strings.Contains(strings.ToLower(h.Get("Cache-Control")), "no-transform") {
		return false
	}
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil {
		return false
	}
	switch {
	case strings.HasPrefix(mt, "text/"), strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		return true
	}
	switch mt {
	case "application/json", "application/javascript", "application/xml", "application/wasm",
		"image/svg+xml", "application/x-ndjson":
		return true
	}
	return false
}

// SplicedGzip is a page held as deflate pieces with holes for a per-request
// string (the visitor's return path): each piece is compressed on its own
// and ends on a byte boundary, so a request's gzip stream is the pieces
// with the string between them as stored blocks — one valid gzip member,
// compressed once per page and not per request.
type SplicedGzip struct {
	pieces [][]byte // deflate, each ending with a sync flush
	plain  [][]byte // the pieces uncompressed, for the CRC
	size   int      // uncompressed size of the pieces
}

func NewSplicedGzip(parts [][]byte) *SplicedGzip {
	s := &SplicedGzip{plain: parts}
	for _, p := range parts {
		var buf bytes.Buffer
		fw, _ := flate.NewWriter(&buf, flate.BestCompression) // level is a constant
		_, _ = fw.Write(p)
		_ = fw.Flush()
		s.pieces = append(s.pieces, buf.Bytes())
		s.size += len(p)
	}
	return s
}

// gzipHeader is a gzip member header: deflate, no name, no time, OS unknown.
var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}

// compressedLen is the length of the gzip stream with fill in each hole.
func (s *SplicedGzip) Len(fill string) int {
	n := len(gzipHeader) + len(finalBlock) + 8 // and the trailer: CRC, size
	for _, p := range s.pieces {
		n += len(p)
	}
	holes := len(s.pieces) - 1
	return n + holes*storedLen(len(fill))
}

// storedLen is the length of n bytes as stored deflate blocks.
func storedLen(n int) int {
	if n == 0 {
		return 0
	}
	blocks := (n + 0xffff - 1) / 0xffff
	return n + 5*blocks
}

// write writes the gzip stream with fill in each hole. One buffer holds
// fill as stored blocks, then the trailer: a request costs one allocation
// and a CRC over the page.
func (s *SplicedGzip) Write(w io.Writer, fill string) {
	n := storedLen(len(fill))
	buf := make([]byte, 0, n+len(finalBlock)+8)
	buf = appendStored(buf, fill)
	stored := buf[:n]
	crc := uint32(0)
	_, _ = w.Write(gzipHeader)
	for i, p := range s.pieces {
		if i > 0 {
			_, _ = w.Write(stored)
			for rest := stored; len(rest) > 0; { // fill's bytes, read from its blocks
				size := int(rest[1]) | int(rest[2])<<8
				crc = crc32.Update(crc, crc32.IEEETable, rest[5:5+size])
				rest = rest[5+size:]
			}
		}
		_, _ = w.Write(p)
		crc = crc32.Update(crc, crc32.IEEETable, s.plain[i])
	}
	buf = append(buf, finalBlock...)
	buf = binary.LittleEndian.AppendUint32(buf, crc)
	buf = binary.LittleEndian.AppendUint32(buf, uint32(s.size+(len(s.pieces)-1)*len(fill)))
	_, _ = w.Write(buf[n:])
}

// finalBlock ends a deflate stream: a final, empty stored block.
var finalBlock = []byte{1, 0, 0, 0xff, 0xff}

// appendStored appends s as stored (uncompressed) deflate blocks.
func appendStored(buf []byte, s string) []byte {
	for len(s) > 0 {
		n := min(len(s), 0xffff)
		buf = append(buf, 0, byte(n), byte(n>>8), ^byte(n), ^byte(n>>8))
		buf = append(buf, s[:n]...)
		s = s[n:]
	}
	return buf
}
