package filedeps

import (
	"fmt"
	"io"
	"strings"
)

// Print writes g's edges, its cycles, its layers from the bottom up and the
// edges that point back up.
func Print(w io.Writer, g Graph) error {
	l := g.Stack()
	p := &printer{w: w}
	p.printf("package %s: %d files, %d edges, %d layers, %d cycles, %d back edges\n",
		g.Package, len(g.Files), len(g.Edges), l.Count, len(l.Cycles), len(l.Back))
	p.printf("edges:\n")
	for _, e := range g.Edges {
		p.printf("  %s -> %s: %s\n", e.From, e.To, strings.Join(e.Names, " "))
	}
	p.printf("cycles:\n")
	for _, c := range l.Cycles {
		p.printf("  %s\n", strings.Join(c, " "))
	}
	p.printf("layers (bottom first):\n")
	byLayer := make([][]string, l.Count)
	for _, f := range g.Files {
		byLayer[l.Layer[f]] = append(byLayer[l.Layer[f]], f)
	}
	for i, files := range byLayer {
		p.printf("  %d: %s\n", i, strings.Join(files, " "))
	}
	p.printf("back edges:\n")
	for _, e := range l.Back {
		p.printf("  %s (%d) -> %s (%d): %s\n", e.From, l.Layer[e.From], e.To, l.Layer[e.To], strings.Join(e.Names, " "))
	}
	return p.err
}

// printer keeps the first write error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}
