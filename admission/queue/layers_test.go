package queue

import (
	"testing"

	"github.com/fairgate/fairgate/internal/filedeps"
)

// TestFilesStack: the package's files use each other without a cycle, so
// they stack in layers (go run ./internal/tools/filedeps ./admission/queue
// prints them).
func TestFilesStack(t *testing.T) {
	if err := filedeps.CheckAcyclic(t.Context(), ".", "."); err != nil {
		t.Error(err)
	}
}
