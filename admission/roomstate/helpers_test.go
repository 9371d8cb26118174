package roomstate_test

import (
	"path/filepath"
	"testing"

	"github.com/fairgate/fairgate/admission/roomstate/boltstore"
)

// openBolt is a bolt store in the test's temporary folder, with the default
// call timeout, closed with the test.
func openBolt(t *testing.T) *boltstore.Store {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "room.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
