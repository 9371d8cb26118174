package boltstore

import (
	"path/filepath"
	"testing"

	"github.com/fairgate/fairgate/seats"
	"github.com/fairgate/fairgate/seats/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) seats.Store {
		s, err := Open(filepath.Join(t.TempDir(), "seats.db"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
