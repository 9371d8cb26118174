package tokens

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
)

// LotteryNumber maps a lottery ticket to a number in [0, 1]:
// the first 8 bytes of HMAC-SHA256(key, lot), big-endian, divided by 2^64.
// lot is the base64 text exactly as carried in the token, so any
// implementation of the formula (docs/DESIGN.md, "Lottery number") agrees bit for bit.
//
// The result is 1.0 only when the 64-bit value rounds up to 2^64 (about once
// in 2^54 tickets); queue.Threshold keeps that case finite.
func LotteryNumber(key []byte, lot string) float64 {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(lot))
	return lotteryValue([sha256.Size]byte(mac.Sum(nil)))
}

// lotteryValue is the lottery number of a ticket's HMAC.
func lotteryValue(sum [sha256.Size]byte) float64 {
	return float64(binary.BigEndian.Uint64(sum[:8])) / (1 << 64)
}
