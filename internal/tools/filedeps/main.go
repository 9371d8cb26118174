// Command filedeps prints, for each Go package named, how its non-test files
// use each other: the file graph, its cycles, the files' layers and the edges
// that point back up.
//
//	go run ./internal/tools/filedeps [-strict] ./room ./gateway
//
// With -strict it exits 1 if any package's files have a cycle.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/fairgate/fairgate/internal/filedeps"
)

func main() {
	strict := flag.Bool("strict", false, "exit 1 if any package's files have a cycle")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: filedeps [-strict] package...")
		os.Exit(2)
	}
	cyclic, err := run(context.Background(), flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "filedeps:", err)
		os.Exit(1)
	}
	if *strict && cyclic {
		os.Exit(1)
	}
}

func run(ctx context.Context, patterns []string) (cyclic bool, err error) {
	graphs, err := filedeps.Load(ctx, ".", patterns...)
	if err != nil {
		return false, err
	}
	for i, g := range graphs {
		if i > 0 {
			fmt.Println()
		}
		if err := filedeps.Print(os.Stdout, g); err != nil {
			return false, err
		}
		cyclic = cyclic || len(g.Stack().Cycles) > 0
	}
	return cyclic, nil
}
