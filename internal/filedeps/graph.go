// Package filedeps finds how the files of one Go package use each other: an
// edge A -> B when code in A uses a top-level func, type, var or const, or a
// method, declared in B. The files should stack in layers, each using only
// the layers below it; an edge that points back up makes a cycle.
package filedeps

import (
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
)

// Edge is one file's use of another's declarations.
type Edge struct {
	From, To string
	// Names are the declarations of To that From uses, sorted.
	Names []string
}

// Graph is the file graph of one package. Files are base names, sorted.
type Graph struct {
	Package string
	Files   []string
	// Edges are sorted by From, then To.
	Edges []Edge
}

// Build makes the graph of pkg from its type-checked files; info must have
// Uses filled in.
func Build(fset *token.FileSet, pkg *types.Package, files []*ast.File, info *types.Info) Graph {
	g := Graph{Package: pkg.Path()}
	for _, f := range files {
		g.Files = append(g.Files, base(fset, f.Pos()))
	}
	slices.Sort(g.Files)

	uses := map[[2]string]map[string]bool{}
	for _, f := range files {
		from := base(fset, f.Pos())
		ast.Inspect(f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			obj := info.Uses[id]
			if obj == nil || !declaredAtTop(pkg, obj) {
				return true
			}
			to := base(fset, obj.Pos())
			if to == from || !slices.Contains(g.Files, to) {
				return true
			}
			key := [2]string{from, to}
			if uses[key] == nil {
				uses[key] = map[string]bool{}
			}
			uses[key][qualifiedName(obj)] = true
			return true
		})
	}
	for key, names := range uses {
		e := Edge{From: key[0], To: key[1]}
		for n := range names {
			e.Names = append(e.Names, n)
		}
		slices.Sort(e.Names)
		g.Edges = append(g.Edges, e)
	}
	slices.SortFunc(g.Edges, func(a, b Edge) int {
		if a.From != b.From {
			return cmpString(a.From, b.From)
		}
		return cmpString(a.To, b.To)
	})
	return g
}

// declaredAtTop reports whether obj is one of pkg's package-level
// declarations or a method of one of its types.
func declaredAtTop(pkg *types.Package, obj types.Object) bool {
	if obj.Pkg() != pkg {
		return false
	}
	if fn, ok := obj.(*types.Func); ok {
		if recv := fn.Signature().Recv(); recv != nil {
			return true
		}
	}
	return obj.Parent() == pkg.Scope()
}

// qualifiedName names a method by its receiver's type: T.m.
func qualifiedName(obj types.Object) string {
	fn, ok := obj.(*types.Func)
	if !ok {
		return obj.Name()
	}
	recv := fn.Signature().Recv()
	if recv == nil {
		return obj.Name()
	}
	t := recv.Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok {
		return n.Obj().Name() + "." + obj.Name()
	}
	return obj.Name()
}

func base(fset *token.FileSet, pos token.Pos) string {
	return filepath.Base(fset.Position(pos).Filename)
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
