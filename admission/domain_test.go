package admission_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/fairgate/fairgate"

// networkAdapters are the packages under admission/ and room/ that open
// DynamoDB, whose SDK speaks HTTP: they may import net/http, and nothing
// else in the domain imports them.
var networkAdapters = []string{
	module + "/admission/roomstate/dynamostore",
	module + "/room/stores",
}

// TestDomainImportsNoHTTP: no package of the domain (admission/... and
// room/..., but for the DynamoDB adapters) imports net/http, directly or
// through any package, the module's own, the standard library's or a
// dependency's. The import graph is go list's; without the go command the
// test is skipped.
func TestDomainImportsNoHTTP(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the import graph")
	}
	out, err := exec.Command(goTool, "list", "-deps",
		"-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}",
		module+"/admission/...", module+"/room/...").Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr(err))
	}
	graph := parseGraph(string(out))
	roots := domainPackages(graph)
	for _, must := range []string{module + "/admission", module + "/admission/tokens", module + "/room"} {
		if !slices.Contains(roots, must) {
			t.Fatalf("%s is not among the domain's packages %v", must, roots)
		}
	}
	for _, root := range roots {
		if chain := importChain(graph, root, "net/http"); chain != nil {
			t.Errorf("%s imports net/http: %s", root, strings.Join(chain, " -> "))
		}
	}
}

func stderr(err error) []byte {
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.Stderr
	}
	return nil
}

// parseGraph reads go list's lines, a package and then its imports.
func parseGraph(out string) map[string][]string {
	graph := make(map[string][]string)
	for line := range strings.Lines(out) {
		fields := strings.Fields(line)
		if len(fields) > 0 {
			graph[fields[0]] = fields[1:]
		}
	}
	return graph
}

// domainPackages are the graph's packages under admission/ and room/ that
// are not network adapters, sorted.
func domainPackages(graph map[string][]string) []string {
	var roots []string
	for pkg := range graph {
		if !under(pkg, module+"/admission") && !under(pkg, module+"/room") {
			continue
		}
		if slices.ContainsFunc(networkAdapters, func(a string) bool { return under(pkg, a) }) {
			continue
		}
		roots = append(roots, pkg)
	}
	slices.Sort(roots)
	return roots
}

func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

// importChain is a shortest chain of imports from from to to, both
// included, or nil when from does not import to.
func importChain(graph map[string][]string, from, to string) []string {
	parent := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		pkg := queue[0]
		queue = queue[1:]
		if pkg == to {
			var chain []string
			for p := pkg; p != ""; p = parent[p] {
				chain = append(chain, p)
			}
			slices.Reverse(chain)
			return chain
		}
		for _, next := range graph[pkg] {
			if _, seen := parent[next]; !seen {
				parent[next] = pkg
				queue = append(queue, next)
			}
		}
	}
	return nil
}

func TestImportChain(t *testing.T) {
	graph := map[string][]string{
		"a": {"b", "c"},
		"b": {"d"},
		"c": {"net/http"},
		"d": {"net/http", "c"},
		"e": {"fmt"},
		"f": {"f", "g"},
		"g": {"f"},
	}
	for _, tc := range []struct {
		from string
		want []string
	}{
		{"a", []string{"a", "c", "net/http"}},
		{"b", []string{"b", "d", "net/http"}},
		{"e", nil},
		{"f", nil},
		{"net/http", []string{"net/http"}},
	} {
		if got := importChain(graph, tc.from, "net/http"); !slices.Equal(got, tc.want) {
			t.Errorf("importChain(%s) = %v, want %v", tc.from, got, tc.want)
		}
	}
}

func TestDomainPackages(t *testing.T) {
	graph := map[string][]string{
		module + "/admission":                         nil,
		module + "/admission/tokens":                  nil,
		module + "/admission/roomstate/dynamostore":   nil,
		module + "/admission/roomstate/dynamostore/x": nil,
		module + "/admissionx":                        nil,
		module + "/room":                              nil,
		module + "/room/stores":                       nil,
		module + "/gateway":                           nil,
		"net/http":                                    nil,
	}
	want := []string{module + "/admission", module + "/admission/tokens", module + "/room"}
	if got := domainPackages(graph); !slices.Equal(got, want) {
		t.Errorf("domainPackages = %v, want %v", got, want)
	}
}
