package tokens

import (
	"context"
	"errors"
	"strconv"
	"testing"
)

func TestSolveAndVerify(t *testing.T) {
	ch, err := NewChallenge()
	if err != nil {
		t.Fatal(err)
	}
	for _, dif := range []int{0, 1, 8, 14} {
		nonce, err := Solve(context.Background(), ch, dif)
		if err != nil {
			t.Fatal(err)
		}
		s := strconv.FormatUint(nonce, 10)
		if err := VerifyWork(ch, dif, s); err != nil {
			t.Errorf("difficulty %d: solution %s rejected: %v", dif, s, err)
		}
		if dif > 0 && nonce > 0 {
			// The solver returns the first solution, so the nonce before it fails.
			if err := VerifyWork(ch, dif, strconv.FormatUint(nonce-1, 10)); !errors.Is(err, ErrWorkInsufficient) {
				t.Errorf("difficulty %d: nonce %d accepted: %v", dif, nonce-1, err)
			}
		}
		if err := VerifyWork(ch+"x", dif+20, s); !errors.Is(err, ErrWorkInsufficient) {
			t.Errorf("solution for another challenge accepted: %v", err)
		}
	}
}

func TestVerifyWorkMalformed(t *testing.T) {
	for _, nonce := range []string{"", "-1", "+1", "01", "1.0", "0x10", " 1", "1 ", "18446744073709551616", "123456789012345678901", "１"} {
		if err := VerifyWork("abc", 0, nonce); !errors.Is(err, ErrNonceMalformed) {
			t.Errorf("VerifyWork(%q) = %v, want ErrNonceMalformed", nonce, err)
		}
	}
	for _, nonce := range []string{"0", "7", "18446744073709551615"} {
		if err := VerifyWork("abc", 0, nonce); err != nil {
			t.Errorf("VerifyWork(%q) = %v", nonce, err)
		}
	}
}

func TestSolveHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Solve(ctx, "abc", 32); !errors.Is(err, context.Canceled) {
		t.Fatalf("Solve on a cancelled context: %v", err)
	}
	if _, err := Solve(context.Background(), "abc", 33); err == nil {
		t.Fatal("difficulty 33 accepted")
	}
}

func TestLeadingZeroBits(t *testing.T) {
	var sum [32]byte
	if got := leadingZeroBits(sum); got != 256 {
		t.Fatalf("all zero: %d", got)
	}
	sum[1] = 0x10
	if got := leadingZeroBits(sum); got != 11 {
		t.Fatalf("got %d, want 11", got)
	}
}
