package boltstore

import (
	"path/filepath"
	"testing"
)

// dbPath is a new store file's path in the test's temporary folder.
func dbPath(t *testing.T) string {
	return filepath.Join(t.TempDir(), "room.db")
}

// open opens the store at path, with the default call timeout.
func open(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
