package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update", false, "rewrite the simulation tables of docs/ from their commands")

// simCommand is how a quoted table's command starts; the rest of its line
// is the arguments of `fairgate sim`.
const simCommand = "go run ./cmd/fairgate sim "

// TestDocTable runs the command quoted with each simulation table of docs/
// and fails if the table differs from its output: the simulation is the
// same byte for byte for a seed, so a table that drifts from the code
// fails here. With -update it rewrites the tables instead.
func TestDocTable(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation skipped in -short mode")
	}
	for _, tc := range []struct{ doc, name string }{
		{"../../docs/FAIRNESS.md", "small"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := os.ReadFile(tc.doc)
			if err != nil {
				t.Fatal(err)
			}
			before, block, after, err := simTable(string(doc), tc.name)
			if err != nil {
				t.Fatalf("%s: %v", tc.doc, err)
			}
			args, err := quotedArgs(block)
			if err != nil {
				t.Fatalf("%s: %v", tc.doc, err)
			}
			var out bytes.Buffer
			if err := simulate(context.Background(), args, &out); err != nil {
				t.Fatalf("%s: %s%s: %v", tc.doc, simCommand, strings.Join(args, " "), err)
			}
			want := fmt.Sprintf("```sh\n%s%s\n```\n\n%s", simCommand, strings.Join(args, " "), out.String())
			if block == want {
				return
			}
			if *updateDocs {
				if err := os.WriteFile(tc.doc, []byte(before+want+after), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			t.Errorf("%s: the sim-table:%s block is not its command's output (go test ./cmd/fairgate -run TestDocTable -update rewrites it):\n--- doc\n%s--- command\n%s",
				tc.doc, tc.name, block, want)
		})
	}
}

// simTable splits doc around the body of its sim-table:name block: the
// text up to and including the begin marker's line, the body, and the rest
// from the end marker on.
func simTable(doc, name string) (before, block, after string, err error) {
	begin := fmt.Sprintf("<!-- sim-table:%s begin -->\n", name)
	end := fmt.Sprintf("<!-- sim-table:%s end -->", name)
	if strings.Count(doc, begin) != 1 || strings.Count(doc, end) != 1 {
		return "", "", "", fmt.Errorf("want one %q and one %q", strings.TrimSpace(begin), end)
	}
	i := strings.Index(doc, begin) + len(begin)
	j := strings.Index(doc, end)
	if j < i {
		return "", "", "", fmt.Errorf("%q before %q", end, strings.TrimSpace(begin))
	}
	return doc[:i], doc[i:j], doc[j:], nil
}

// quotedArgs is the arguments of the block's one simCommand line. They are
// plain words: the command is quoted for a shell, and no argument needs
// quoting.
func quotedArgs(block string) ([]string, error) {
	var found []string
	for line := range strings.Lines(block) {
		if rest, ok := strings.CutPrefix(line, simCommand); ok {
			found = append(found, rest)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("want one line starting %q, found %d", simCommand, len(found))
	}
	return strings.Fields(found[0]), nil
}

func TestSimTableBlock(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		args      []string
		wantErr   bool
	}{
		{name: "one block", doc: "a\n<!-- sim-table:small begin -->\n```sh\n" + simCommand + "--seed 2 --mixed\n```\n\n| t |\n<!-- sim-table:small end -->\nz\n",
			args: []string{"--seed", "2", "--mixed"}},
		{name: "no end", doc: "<!-- sim-table:small begin -->\n" + simCommand + "--mixed\n", wantErr: true},
		{name: "two begins", doc: "<!-- sim-table:small begin -->\n<!-- sim-table:small begin -->\n<!-- sim-table:small end -->", wantErr: true},
		{name: "end first", doc: "<!-- sim-table:small end -->\n<!-- sim-table:small begin -->\n", wantErr: true},
		{name: "no command", doc: "<!-- sim-table:small begin -->\n| t |\n<!-- sim-table:small end -->", wantErr: true},
		{name: "two commands", doc: "<!-- sim-table:small begin -->\n" + simCommand + "a\n" + simCommand + "b\n<!-- sim-table:small end -->", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, block, after, err := simTable(tc.doc, "small")
			var args []string
			if err == nil {
				if before+block+after != tc.doc {
					t.Errorf("split %q %q %q does not rejoin the doc", before, block, after)
				}
				args, err = quotedArgs(block)
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && strings.Join(args, " ") != strings.Join(tc.args, " ") {
				t.Errorf("args %q, want %q", args, tc.args)
			}
		})
	}
}

func TestSimFormat(t *testing.T) {
	for _, tc := range []struct {
		format  string
		wantErr bool
	}{
		{"text", false},
		{"markdown", false},
		{"html", true},
		{"", true},
	} {
		t.Run(tc.format, func(t *testing.T) {
			write, err := reportWriter(tc.format)
			if tc.wantErr != errors.Is(err, errUsage) || tc.wantErr == (write != nil) {
				t.Fatalf("--format %q: writer %v, err %v; want a usage error: %v", tc.format, write != nil, err, tc.wantErr)
			}
		})
	}
}
