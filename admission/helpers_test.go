package admission

import (
	"crypto/sha256"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/tokens"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func secretOf(label string) []byte {
	s := sha256.Sum256([]byte(label))
	return s[:]
}

func testRing(t testing.TB, signing string, ids ...string) *tokens.KeyRing {
	t.Helper()
	secrets := map[string][]byte{}
	for _, id := range ids {
		secrets[id] = secretOf("key " + id)
	}
	ring, err := tokens.NewKeyRing(signing, secrets, secretOf("lottery"))
	if err != nil {
		t.Fatal(err)
	}
	return ring
}

// seeded is a deterministic random stream for reproducible tests.
type seeded struct{ r *rand.ChaCha8 }

func newSeeded(seed byte) *seeded { return &seeded{rand.NewChaCha8([32]byte{seed})} }

func (s *seeded) Read(p []byte) (int, error) { return s.r.Read(p) }

func testRoom(t testing.TB, mutate func(*RoomConfig)) *Room {
	t.Helper()
	cfg := RoomConfig{Name: "sale", State: StateQueue, Rate: 100, Burst: 100, Tau: time.Minute, Difficulty: 0, Window: time.Minute}
	if mutate != nil {
		mutate(&cfg)
	}
	r, err := NewRoom(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func testGate(t testing.TB, ledgerSize int) *Gate {
	t.Helper()
	now := t0
	return NewGate(testRing(t, "k1", "k1"), Policy{}, queue.NewMemoryLedger(ledgerSize, func() time.Time { return now }),
		WithRandom(newSeeded(7)))
}
