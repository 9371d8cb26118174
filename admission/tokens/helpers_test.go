package tokens

import (
	"crypto/sha256"
	"math/rand/v2"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func secretOf(label string) []byte {
	s := sha256.Sum256([]byte(label))
	return s[:]
}

func testRing(t testing.TB, signing string, ids ...string) *KeyRing {
	t.Helper()
	secrets := map[string][]byte{}
	for _, id := range ids {
		secrets[id] = secretOf("key " + id)
	}
	ring, err := NewKeyRing(signing, secrets, secretOf("lottery"))
	if err != nil {
		t.Fatal(err)
	}
	return ring
}

// seeded is a deterministic random stream for reproducible tests.
type seeded struct{ r *rand.ChaCha8 }

func newSeeded(seed byte) *seeded { return &seeded{rand.NewChaCha8([32]byte{seed})} }

func (s *seeded) Read(p []byte) (int, error) { return s.r.Read(p) }
