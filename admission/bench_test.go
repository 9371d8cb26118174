package admission

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/golang-jwt/jwt/v5"
)

// benchDifficulty is a realistic proof-of-work difficulty (the front
// doors' default): it sets how long a token's challenge is to check.
const benchDifficulty = 16

// benchGate is a gate as production runs it: crypto/rand, not a seeded
// stream, so the benchmarks pay for real randomness.
func benchGate(b *testing.B, ledgerSize int) (*Gate, *Room) {
	b.Helper()
	g := NewGate(testRing(b, "k1", "k1"), Policy{}, queue.NewMemoryLedger(ledgerSize, func() time.Time { return t0 }))
	return g, testRoom(b, func(c *RoomConfig) { c.Difficulty = benchDifficulty; c.Tau = 24 * time.Hour; c.Adaptive = false })
}

func BenchmarkIssue(b *testing.B) {
	g, room := benchGate(b, 1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Issue(room, Visitor{}, t0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecide is the hot admission path: verify a token and its proof of
// work, compute eligibility, re-sign with a new nxt.
func BenchmarkDecide(b *testing.B) {
	g, room := benchGate(b, 1)
	tk, _ := g.Issue(room, Visitor{}, t0)
	at := tk.Claims.NextAttempt()
	ctx := context.Background()
	nonce, err := tokens.Solve(ctx, tk.Claims.Ch, tk.Claims.Dif)
	if err != nil {
		b.Fatal(err)
	}
	attempt := Attempt{Token: tk.Token, Nonce: strconv.FormatUint(nonce, 10), Now: at}
	b.ReportAllocs()
	for b.Loop() {
		if d := g.Decide(ctx, room, attempt); d.Outcome != OutcomeWait {
			b.Fatal(d.Outcome, d.Err)
		}
	}
}

// BenchmarkVerifyWait is verification alone, the part of Decide that every
// request pays, comparable to golang-jwt's own HS256 parse.
func BenchmarkVerifyWait(b *testing.B) {
	g := testGate(b, 1)
	room := testRoom(b, nil)
	tk, _ := g.Issue(room, Visitor{}, t0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Codec().ParseWait(tk.Token, "sale", t0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyPass(b *testing.B) {
	g := testGate(b, 1<<20)
	room := testRoom(b, func(c *RoomConfig) { c.State = StateOpen })
	tk, _ := g.Issue(room, Visitor{}, t0)
	d := g.Decide(context.Background(), room, Attempt{Token: tk.Token, Nonce: "0", Now: tk.Claims.NextAttempt()})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.VerifyPass("sale", d.Pass, t0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRejectForged must cost no more than BenchmarkVerifyWait: a forged
// signature is found before the claims are validated.
func BenchmarkRejectForged(b *testing.B) {
	g := testGate(b, 1)
	room := testRoom(b, nil)
	tk, _ := g.Issue(room, Visitor{}, t0)
	forged := tk.Token[:strings.LastIndexByte(tk.Token, '.')+1] + strings.Repeat("A", 43)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Codec().ParseWait(forged, "sale", t0); err == nil {
			b.Fatal("forged token verified")
		}
	}
}

func BenchmarkVerifyWork(b *testing.B) {
	ch, _ := tokens.NewChallenge()
	nonce, err := tokens.Solve(context.Background(), ch, benchDifficulty)
	if err != nil {
		b.Fatal(err)
	}
	solution := strconv.FormatUint(nonce, 10)
	b.ReportAllocs()
	for b.Loop() {
		if err := tokens.VerifyWork(ch, benchDifficulty, solution); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGolangJWTBaseline is golang-jwt's own HS256 parse of the same
// waiting token into MapClaims with default options: the yardstick the
// other verification benchmarks are read against.
func BenchmarkGolangJWTBaseline(b *testing.B) {
	g := testGate(b, 1)
	room := testRoom(b, nil)
	tk, _ := g.Issue(room, Visitor{}, t0)
	secret := secretOf("key k1")
	keyFunc := func(*jwt.Token) (any, error) { return secret, nil }
	parser := jwt.NewParser(jwt.WithoutClaimsValidation())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parser.Parse(tk.Token, keyFunc); err != nil {
			b.Fatal(err)
		}
	}
}
