package admission

import (
	"encoding/base64"
	"encoding/hex"
	"io"
	"regexp"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/tokens"
)

// uuidV7 is the canonical text of a version 7, RFC 9562 variant UUID.
var uuidV7 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestIssueDrawsItsTextsInOrder: a new token's id, subject, lottery draw
// and challenge are the random stream's bytes in that order and in their
// encodings (the id's random bits, then for an anonymous visitor the
// subject's 16 bytes base64url and the draw's 16 bytes standard base64,
// then the challenge's base64url), so a seeded stream gives the same
// tokens whatever the reads look like; a logged-in visitor keeps their
// subject and their room's lot and draws only the id and the challenge.
func TestIssueDrawsItsTextsInOrder(t *testing.T) {
	ring := testRing(t, "k1", "k1")
	room := testRoom(t, nil)
	for _, c := range []struct {
		name string
		who  Visitor
	}{
		{"anonymous", Visitor{}},
		{"anonymous, bound", Visitor{Binding: "net"}},
		{"logged in", Visitor{Subject: "alice", Binding: "net"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewGate(ring, Policy{}, queue.NewMemoryLedger(10, func() time.Time { return t0 }), WithRandom(newSeeded(9)))
			stream := newSeeded(9)
			read := func(n int) []byte { return readN(t, stream, n) }
			idBytes := read(16)
			wantSubject, wantLot := c.who.Subject, ring.IdentityLot(room.Name(), c.who.Subject)
			if c.who.Subject == "" {
				wantSubject = AnonymousPrefix + base64.RawURLEncoding.EncodeToString(read(16))
				wantLot = base64.StdEncoding.EncodeToString(read(16))
			}
			wantCh := base64.RawURLEncoding.EncodeToString(read(tokens.ChallengeBytes))

			tk, err := g.Issue(room, c.who, t0)
			if err != nil {
				t.Fatal(err)
			}
			cl := tk.Claims
			if cl.Subject != wantSubject || cl.Lot != wantLot || cl.Ch != wantCh || cl.Bnd != c.who.Binding {
				t.Errorf("claims sub %q lot %q ch %q bnd %q, want %q %q %q %q",
					cl.Subject, cl.Lot, cl.Ch, cl.Bnd, wantSubject, wantLot, wantCh, c.who.Binding)
			}
			if !uuidV7.MatchString(cl.ID) {
				t.Fatalf("id %q is not a version 7 UUID", cl.ID)
			}
			// The id's last eight bytes are the stream's, but for the variant bits.
			id, err := hex.DecodeString(cl.ID[19:23] + cl.ID[24:])
			if err != nil {
				t.Fatal(err)
			}
			if id[0]&0x3f != idBytes[8]&0x3f || string(id[1:]) != string(idBytes[9:]) {
				t.Errorf("id %s, want its random tail from %x", cl.ID, idBytes[8:])
			}
			parsed, err := g.codec.ParseWait(tk.Token, room.Name(), t0)
			if err != nil {
				t.Fatal(err)
			}
			if *parsed != *cl {
				t.Errorf("signed claims %+v, want %+v", *parsed, *cl)
			}
			// Nothing more was read than the texts need.
			if a, b := read(8), readN(t, g.random, 8); string(a) != string(b) {
				t.Errorf("the gate read %x next, want %x", b, a)
			}
		})
	}
}

func readN(t *testing.T, r io.Reader, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAppendUUIDIsItsString: appendUUID writes what uuid.UUID.String
// does, after what the buffer holds.
func TestAppendUUIDIsItsString(t *testing.T) {
	stream := newSeeded(5)
	ids := []uuid.UUID{{}, uuid.Max, {0: 0x01, 3: 0xa0, 4: 0x0f, 7: 0xf0, 9: 0x9a, 15: 0xff}}
	for range 50 {
		ids = append(ids, uuid.UUID(readN(t, stream, 16)))
	}
	for _, id := range ids {
		if got := string(appendUUID([]byte("x"), id)); got != "x"+id.String() {
			t.Errorf("appendUUID(%x) = %q, want x%q", id[:], got, id.String())
		}
	}
}
