package filedeps

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// listed is the part of `go list -json` that Load reads.
type listed struct {
	ImportPath string
	Dir        string
	Export     string
	GoFiles    []string
	DepOnly    bool
	Error      *struct{ Err string }
}

// Load type-checks the non-test files of each package the patterns name
// (as `go list` takes them, run in dir) and returns their graphs. It asks
// the go command for the export data of their imports.
func Load(ctx context.Context, dir string, patterns ...string) ([]Graph, error) {
	pkgs, err := list(ctx, dir, patterns)
	if err != nil {
		return nil, err
	}
	exports := map[string]string{}
	var targets []listed
	for _, p := range pkgs {
		if p.Error != nil {
			return nil, fmt.Errorf("go list %s: %s", p.ImportPath, p.Error.Err)
		}
		exports[p.ImportPath] = p.Export
		if !p.DepOnly {
			targets = append(targets, p)
		}
	}
	var graphs []Graph
	for _, p := range targets {
		g, err := check(p, exports)
		if err != nil {
			return nil, err
		}
		graphs = append(graphs, g)
	}
	return graphs, nil
}

func list(ctx context.Context, dir string, patterns []string) ([]listed, error) {
	args := append([]string{"list", "-json", "-export", "-deps", "--"}, patterns...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			return pkgs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading go list: %w", err)
		}
		pkgs = append(pkgs, p)
	}
}

func check(p listed, exports map[string]string) (Graph, error) {
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return Graph{}, fmt.Errorf("parsing %s: %w", p.ImportPath, err)
		}
		files = append(files, f)
	}
	lookup := func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", lookup)}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	pkg, err := conf.Check(p.ImportPath, fset, files, info)
	if err != nil {
		return Graph{}, fmt.Errorf("type-checking %s: %w", p.ImportPath, err)
	}
	return Build(fset, pkg, files, info), nil
}

// CheckAcyclic loads the packages the patterns name and reports each cycle
// among a package's files as an error.
func CheckAcyclic(ctx context.Context, dir string, patterns ...string) error {
	graphs, err := Load(ctx, dir, patterns...)
	if err != nil {
		return err
	}
	var errs []error
	for _, g := range graphs {
		for _, c := range g.Stack().Cycles {
			errs = append(errs, fmt.Errorf("%s: files use each other in a cycle: %s", g.Package, strings.Join(c, " ")))
		}
	}
	return errors.Join(errs...)
}
