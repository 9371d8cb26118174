package tokens

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
)

// maxDifficulty bounds proof-of-work difficulty in leading zero bits. 32 bits
// is about four billion hashes, minutes in a browser: anything above is a
// configuration mistake, not a defence.
const maxDifficulty = 32

// CheckDifficulty is the one rule for a configured difficulty: 0 to
// maxDifficulty bits. The room, the config and the admin API all apply it.
func CheckDifficulty(bits int) error {
	if bits < 0 || bits > maxDifficulty {
		return fmt.Errorf("difficulty %d: must be 0 to %d bits", bits, maxDifficulty)
	}
	return nil
}

// ChallengeBytes is the size of a challenge before base64url encoding.
const ChallengeBytes = 16

// maxNonceDigits is the longest decimal uint64.
const maxNonceDigits = 20

var (
	// ErrNonceMalformed means the solution is not a canonical decimal uint64.
	ErrNonceMalformed = errors.New("proof of work: nonce is not a decimal number")
	// ErrWorkInsufficient means the hash has fewer leading zero bits than required.
	ErrWorkInsufficient = errors.New("proof of work: hash does not meet the difficulty")
)

// NewChallenge returns 16 random bytes as unpadded base64url text.
func NewChallenge() (string, error) {
	var b [ChallengeBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("reading random bytes: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// VerifyWork checks that SHA-256(challenge + ":" + nonce) has at least
// difficulty leading zero bits. nonce must be a canonical decimal uint64 (no
// sign, no leading zeros), so every solution has exactly one spelling. It costs
// one hash and does not allocate for challenges of ordinary length.
func VerifyWork(challenge string, difficulty int, nonce string) error {
	if !canonicalDecimal(nonce) {
		return ErrNonceMalformed
	}
	var buf [96]byte
	msg := append(append(append(buf[:0], challenge...), ':'), nonce...)
	sum := sha256.Sum256(msg)
	if leadingZeroBits(sum) < difficulty {
		return ErrWorkInsufficient
	}
	return nil
}

// Solve searches nonces from 0 upwards until one meets the difficulty. It
// checks ctx every 4096 hashes.
func Solve(ctx context.Context, challenge string, difficulty int) (uint64, error) {
	if difficulty < 0 || difficulty > maxDifficulty {
		return 0, fmt.Errorf("difficulty %d out of range 0..%d", difficulty, maxDifficulty)
	}
	prefix := append([]byte(challenge), ':')
	buf := make([]byte, 0, len(prefix)+maxNonceDigits)
	for nonce := uint64(0); ; nonce++ {
		if nonce&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, fmt.Errorf("solving proof of work: %w", err)
			}
		}
		msg := strconv.AppendUint(append(buf[:0], prefix...), nonce, 10)
		if leadingZeroBits(sha256.Sum256(msg)) >= difficulty {
			return nonce, nil
		}
	}
}

func leadingZeroBits(sum [sha256.Size]byte) int {
	n := 0
	for _, b := range sum {
		if b != 0 {
			return n + bits.LeadingZeros8(b)
		}
		n += 8
	}
	return n
}

func canonicalDecimal(s string) bool {
	if s == "" || len(s) > maxNonceDigits || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	if len(s) == maxNonceDigits {
		_, err := strconv.ParseUint(s, 10, 64)
		return err == nil
	}
	return true
}
