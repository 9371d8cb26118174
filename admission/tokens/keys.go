package tokens

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"os"
	"sort"
	"strings"
	"sync"
)

// minKeyBytes is the shortest secret accepted for signing or for the lottery.
// HMAC-SHA256 gains nothing from more than 64 bytes and loses strength below 32.
const minKeyBytes = 32

// KeysConfig is the operator-facing description of a key ring. Each secret is
// written as one of:
//
//	base64 text            the secret itself (standard or URL alphabet, padding optional)
//	env:NAME               base64 text read from environment variable NAME
//	file:/path/to/secret   base64 text read from a file (surrounding whitespace ignored)
type KeysConfig struct {
	// Signing is the id (`kid`) of the key that signs new tokens. It must be
	// one of Keys. Every key in Keys verifies, so rotating means adding a key,
	// switching Signing to it, and removing the old one after the longest
	// token lifetime has passed.
	Signing string `json:"signing"`
	// Keys maps key ids to secrets.
	Keys map[string]string `json:"keys"`
	// Lottery is the secret that turns a lottery ticket into a lottery number.
	// It must differ from every signing key and must stay the same for as long
	// as any waiting token is alive, or the queue is reshuffled.
	Lottery string `json:"lottery"`
}

// KeyRing holds the HMAC secrets that sign and verify tokens, by key id, and
// the separate lottery secret.
type KeyRing struct {
	signingID string
	secrets   map[string][]byte
	lottery   []byte
	// lotteryMACs and signingMACs pool keyed HMACs: one is needed per
	// request, and hmac.New allocates its two inner hashes every time.
	lotteryMACs *macPool
	// order lists key ids with the signing key first, the likeliest signer;
	// signingMACs are their pools in the same order, so that no signature
	// looks its key up by id.
	order       []string
	signingMACs []*macPool
}

// Environment resolves `env:` and `file:` secret references. The zero value
// uses the process environment and file system.
type Environment struct {
	Getenv   func(string) string
	ReadFile func(string) ([]byte, error)
}

func (e Environment) getenv(name string) string {
	if e.Getenv != nil {
		return e.Getenv(name)
	}
	return os.Getenv(name)
}

func (e Environment) readFile(path string) ([]byte, error) {
	if e.ReadFile != nil {
		return e.ReadFile(path)
	}
	return os.ReadFile(path)
}

// Load resolves every secret of the config and builds a key ring.
func (c KeysConfig) Load(env Environment) (*KeyRing, error) {
	if len(c.Keys) == 0 {
		return nil, errors.New("no signing keys configured")
	}
	secrets := make(map[string][]byte, len(c.Keys))
	for id, spec := range c.Keys {
		if id == "" || len(id) > 64 {
			return nil, fmt.Errorf("key id %q: must be 1 to 64 characters", id)
		}
		secret, err := resolveSecret(spec, env)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", id, err)
		}
		secrets[id] = secret
	}
	lottery, err := resolveSecret(c.Lottery, env)
	if err != nil {
		return nil, fmt.Errorf("lottery key: %w", err)
	}
	return NewKeyRing(c.Signing, secrets, lottery)
}

// NewKeyRing builds a key ring from raw secrets.
func NewKeyRing(signingID string, secrets map[string][]byte, lottery []byte) (*KeyRing, error) {
	if _, ok := secrets[signingID]; !ok {
		return nil, fmt.Errorf("signing key %q is not among the configured keys", signingID)
	}
	for id, s := range secrets {
		if len(s) < minKeyBytes {
			return nil, fmt.Errorf("key %q: %d bytes, need at least %d", id, len(s), minKeyBytes)
		}
		if string(s) == string(lottery) {
			return nil, fmt.Errorf("key %q: the lottery key must not also be a signing key", id)
		}
	}
	if len(lottery) < minKeyBytes {
		return nil, fmt.Errorf("lottery key: %d bytes, need at least %d", len(lottery), minKeyBytes)
	}
	copied := make(map[string][]byte, len(secrets))
	for id, s := range secrets {
		copied[id] = append([]byte(nil), s...)
	}
	k := &KeyRing{signingID: signingID, secrets: copied, lottery: append([]byte(nil), lottery...)}
	k.lotteryMACs = newMACPool(k.lottery)
	k.order = append(k.order, signingID)
	for _, id := range k.ids() {
		if id != signingID {
			k.order = append(k.order, id)
		}
	}
	for _, id := range k.order {
		k.signingMACs = append(k.signingMACs, newMACPool(copied[id]))
	}
	return k, nil
}

// SigningID is the id of the key that signs new tokens.
func (k *KeyRing) SigningID() string { return k.signingID }

// ids lists every verifying key id, sorted.
func (k *KeyRing) ids() []string {
	ids := make([]string, 0, len(k.secrets))
	for id := range k.secrets {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (k *KeyRing) secret(id string) ([]byte, bool) {
	s, ok := k.secrets[id]
	return s, ok
}

// Draw is what a lottery ticket decides under a ring's lottery key: its
// lottery number and the phase of its checkpoint grid, two independent
// numbers in [0, 1) from the two halves of one keyed hash, so a judged
// attempt pays for one hash.
type Draw struct{ Number, Phase float64 }

// Draw returns the draw of a ticket under this ring's lottery key.
func (k *KeyRing) Draw(lot string) Draw {
	m := k.lotteryMACs.get()
	defer k.lotteryMACs.put(m)
	sum := m.sumString(lot)
	return Draw{Number: lotteryValue(sum), Phase: float64(binary.BigEndian.Uint64(sum[8:16])>>11) / (1 << 53)}
}

// Lottery returns the lottery number of a ticket under this ring's lottery key.
func (k *KeyRing) Lottery(lot string) float64 { return k.Draw(lot).Number }

// signer returns the position in order of the ring key that made the
// HS256 signature of a compact JWS, or -1 if none did. It allocates
// nothing, so forged tokens are turned away before any JSON is decoded.
func (k *KeyRing) signer(token string) int {
	dot := strings.LastIndexByte(token, '.')
	if dot < 0 {
		return -1
	}
	var given, want [64]byte
	sig := token[dot+1:]
	if len(sig) != base64.RawURLEncoding.EncodedLen(sha256.Size) {
		return -1
	}
	copy(given[:], sig)
	for i, pool := range k.signingMACs {
		sum := pool.sumString(token[:dot])
		appendBase64URL(want[:0], sum[:])
		if subtle.ConstantTimeCompare(given[:len(sig)], want[:len(sig)]) == 1 {
			return i
		}
	}
	return -1
}

// signJWS is the compact JWS header.payload.signature of payload under
// the signing key, header already encoded. The token is built in the
// pooled HMAC's input buffer: the string returned is its only allocation.
func (k *KeyRing) signJWS(header string, payload []byte) string {
	signing := k.signingMACs[0] // the signing key is first in order
	m := signing.get()
	defer signing.put(m)
	m.in = appendBase64URL(append(append(m.in[:0], header...), '.'), payload)
	sig := m.sumBytes(m.in)
	m.in = appendBase64URL(append(m.in, '.'), sig[:])
	return string(m.in)
}

// macState is a keyed HMAC-SHA256 with the scratch its callers need.
// hash.Hash is an interface, so what crosses it escapes: a string written
// to it is first copied to a new slice (io.WriteString), and a sum taken
// into an array on the caller's stack moves that array to the heap. Pooled
// with the HMAC, the input and sum buffers cost nothing per call (seven
// allocations of every judged admit poll did).
type macState struct {
	h   hash.Hash
	in  []byte
	sum [sha256.Size]byte
}

// maxPooledMACInput keeps a rare long input (an address given to Bind)
// from pinning its buffer in the pool; tokens are below maxTokenBytes.
const maxPooledMACInput = 4 << 10

// macPool pools the macStates of one key.
type macPool struct{ pool sync.Pool }

func newMACPool(key []byte) *macPool {
	p := &macPool{}
	p.pool.New = func() any { return &macState{h: hmac.New(sha256.New, key), in: make([]byte, 0, 1024)} }
	return p
}

func (p *macPool) get() *macState { return p.pool.Get().(*macState) }

func (p *macPool) put(m *macState) {
	if cap(m.in) <= maxPooledMACInput {
		p.pool.Put(m)
	}
}

// sumString is the HMAC of s under the pool's key.
func (p *macPool) sumString(s string) [sha256.Size]byte {
	m := p.get()
	defer p.put(m)
	return m.sumString(s)
}

// sumBytes is the HMAC of data.
func (m *macState) sumBytes(data []byte) [sha256.Size]byte {
	m.h.Reset()
	m.h.Write(data)
	return [sha256.Size]byte(m.h.Sum(m.sum[:0]))
}

// sumString is the HMAC of s.
func (m *macState) sumString(s string) [sha256.Size]byte {
	m.in = append(m.in[:0], s...)
	return m.sumBytes(m.in)
}

// sumParts is the HMAC of label, then each part after a NUL.
func (m *macState) sumParts(label string, parts ...string) [sha256.Size]byte {
	m.in = append(m.in[:0], label...)
	for _, p := range parts {
		m.in = append(append(m.in, 0), p...)
	}
	return m.sumBytes(m.in)
}

// GenerateKeys returns a fresh config with one signing key and a lottery key,
// secrets inline.
func GenerateKeys(kid string) (KeysConfig, error) {
	sign, err := randomSecret()
	if err != nil {
		return KeysConfig{}, err
	}
	lottery, err := randomSecret()
	if err != nil {
		return KeysConfig{}, err
	}
	return KeysConfig{Signing: kid, Keys: map[string]string{kid: sign}, Lottery: lottery}, nil
}

func randomSecret() (string, error) {
	b := make([]byte, minKeyBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("reading random bytes: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// ResolveText resolves a value that may be `env:NAME` or `file:/path`
// to its text; anything else is returned as it is.
func ResolveText(spec string, env Environment) (string, error) {
	switch {
	case strings.HasPrefix(spec, "env:"):
		name := strings.TrimPrefix(spec, "env:")
		text := env.getenv(name)
		if text == "" {
			return "", fmt.Errorf("environment variable %s is empty or unset", name)
		}
		return text, nil
	case strings.HasPrefix(spec, "file:"):
		b, err := env.readFile(strings.TrimPrefix(spec, "file:"))
		if err != nil {
			return "", fmt.Errorf("reading secret file: %w", err)
		}
		return string(b), nil
	}
	return spec, nil
}

func resolveSecret(spec string, env Environment) ([]byte, error) {
	text, err := ResolveText(spec, env)
	if err != nil {
		return nil, err
	}
	return decodeSecret(strings.TrimSpace(text))
}

func decodeSecret(text string) ([]byte, error) {
	if text == "" {
		return nil, errors.New("secret is empty")
	}
	unpadded := strings.TrimRight(text, "=")
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(unpadded); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("secret is not base64")
}

// Bind returns a short keyed hash of data, such as a client address, so a
// token can be tied to it without carrying it. The lottery key is used with a
// prefix no lottery ticket (base64) can start with, so the two uses never
// collide.
func (k *KeyRing) Bind(data string) string {
	m := k.lotteryMACs.get()
	defer k.lotteryMACs.put(m)
	sum := m.sumParts("bind", data)
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// keyedHash is HMAC(lottery key, label NUL parts...) under a label no lottery
// ticket (base64) can start with, so the uses never collide.
func (k *KeyRing) keyedHash(label string, parts ...string) [sha256.Size]byte {
	m := k.lotteryMACs.get()
	defer k.lotteryMACs.put(m)
	return m.sumParts(label, parts...)
}

// IdentityLot is the lottery ticket of a verified subject in a room: every
// token the subject takes there carries the same draw, so a second tab or
// device buys nothing.
func (k *KeyRing) IdentityLot(room, subject string) string {
	sum := k.keyedHash("lot", room, subject)
	return base64.StdEncoding.EncodeToString(sum[:16])
}
