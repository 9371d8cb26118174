package filedeps

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"maps"
	"slices"
	"strings"
	"testing"
)

// graphOf type-checks a package made of files (name to source, each
// without its package clause).
func graphOf(t *testing.T, files map[string]string) Graph {
	t.Helper()
	fset := token.NewFileSet()
	var parsed []*ast.File
	for _, name := range slices.Sorted(maps.Keys(files)) {
		f, err := parser.ParseFile(fset, name, "package p\n"+files[name], parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.Default()}
	pkg, err := conf.Check("p", fset, parsed, info)
	if err != nil {
		t.Fatal(err)
	}
	return Build(fset, pkg, parsed, info)
}

func edgeStrings(edges []Edge) []string {
	var out []string
	for _, e := range edges {
		out = append(out, e.From+">"+e.To+":"+strings.Join(e.Names, ","))
	}
	return out
}

func TestStack(t *testing.T) {
	tests := []struct {
		name   string
		files  map[string]string
		edges  []string
		cycles [][]string
		layers map[string]int
		back   []string
	}{
		{
			name: "a stack",
			files: map[string]string{
				"a.go": "func A() int { return B() }",
				"b.go": "func B() int { return c }",
				"c.go": "const c = 1",
			},
			edges:  []string{"a.go>b.go:B", "b.go>c.go:c"},
			layers: map[string]int{"a.go": 2, "b.go": 1, "c.go": 0},
		},
		{
			name: "methods by their receiver, fields not",
			files: map[string]string{
				"a.go": "func A(t *T) int { return t.m() + t.f }",
				"b.go": "func (t *T) m() int { return 0 }",
				"c.go": "type T struct{ f int }",
			},
			edges:  []string{"a.go>b.go:T.m", "a.go>c.go:T", "b.go>c.go:T"},
			layers: map[string]int{"a.go": 2, "b.go": 1, "c.go": 0},
		},
		{
			name: "a local shadowing a top-level name",
			files: map[string]string{
				"a.go": "func A() int { b := 2; return b }",
				"b.go": "var b = 1",
			},
			layers: map[string]int{"a.go": 0, "b.go": 0},
		},
		{
			name: "a cycle",
			files: map[string]string{
				"a.go": "func A() { B() }",
				"b.go": "func B() { A() }",
				"c.go": "func C() { A() }",
			},
			edges:  []string{"a.go>b.go:B", "b.go>a.go:A", "c.go>a.go:A"},
			cycles: [][]string{{"a.go", "b.go"}},
			// Either edge of the two could point back up: ties go by name.
			layers: map[string]int{"a.go": 0, "b.go": 1, "c.go": 1},
			back:   []string{"a.go>b.go:B"},
		},
		{
			name: "the fewest edges pointing back up",
			files: map[string]string{
				"a.go": "func A() { B() }",
				"b.go": "func B() { C() }",
				"c.go": "func C() { A(); B() }",
			},
			edges:  []string{"a.go>b.go:B", "b.go>c.go:C", "c.go>a.go:A", "c.go>b.go:B"},
			cycles: [][]string{{"a.go", "b.go", "c.go"}},
			// Not c's two edges: b's alone breaks both cycles.
			layers: map[string]int{"a.go": 1, "b.go": 0, "c.go": 2},
			back:   []string{"b.go>c.go:C"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := graphOf(t, tt.files)
			if got := edgeStrings(g.Edges); !slices.Equal(got, tt.edges) {
				t.Errorf("edges = %q, want %q", got, tt.edges)
			}
			l := g.Stack()
			if !slices.EqualFunc(l.Cycles, tt.cycles, slices.Equal) {
				t.Errorf("cycles = %q, want %q", l.Cycles, tt.cycles)
			}
			if !maps.Equal(l.Layer, tt.layers) {
				t.Errorf("layers = %v, want %v", l.Layer, tt.layers)
			}
			if got := edgeStrings(l.Back); !slices.Equal(got, tt.back) {
				t.Errorf("back edges = %q, want %q", got, tt.back)
			}
		})
	}
}

// TestLoad reads a package of this module through the go command.
func TestLoad(t *testing.T) {
	graphs, err := Load(t.Context(), ".", ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(graphs) != 1 {
		t.Fatalf("got %d graphs, want 1", len(graphs))
	}
	g := graphs[0]
	if g.Package != "github.com/fairgate/fairgate/internal/filedeps" {
		t.Errorf("package = %s", g.Package)
	}
	if slices.ContainsFunc(g.Files, func(f string) bool { return strings.HasSuffix(f, "_test.go") }) {
		t.Errorf("files %q include tests", g.Files)
	}
	if !slices.ContainsFunc(g.Edges, func(e Edge) bool { return e.From == "print.go" && e.To == "layers.go" }) {
		t.Errorf("edges %q lack print.go -> layers.go", edgeStrings(g.Edges))
	}
}
