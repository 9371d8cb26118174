package room

import (
	"strings"
	"testing"

	"github.com/fairgate/fairgate/internal/filedeps"
)

// TestFilesStack: the package's files use each other without a cycle, so
// they stack in layers (go run ./internal/tools/filedeps ./room prints
// them).
func TestFilesStack(t *testing.T) {
	graphs, err := filedeps.Load(t.Context(), ".", ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range graphs {
		for _, c := range g.Stack().Cycles {
			t.Errorf("%s: files use each other in a cycle: %s", g.Package, strings.Join(c, " "))
		}
	}
}
