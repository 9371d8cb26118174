package stores

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairgate/fairgate/room"
)

// TestBoltStoreHeldByAnother: a bolt file is one process's; another open
// gives up after call_timeout with an error naming the file.
func TestBoltStoreHeldByAnother(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rooms.db")
	st, err := room.Config{StateStore: &room.StateStore{Path: path, CallTimeout: room.Duration(100 * time.Millisecond)}}.SettleStateStore("")
	if err != nil {
		t.Fatal(err)
	}
	first, err := Open(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := Open(t.Context(), st)
	if err == nil {
		second.Close()
		t.Fatal("opened a bolt file another holder has open")
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "another process") {
		t.Fatalf("unclear error: %v", err)
	}
}
