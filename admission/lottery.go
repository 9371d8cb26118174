package admission

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"io"
	"math"
)

// LotteryNumber maps a lottery ticket to a number in [0, 1]:
// the first 8 bytes of HMAC-SHA256(key, lot), big-endian, divided by 2^64.
// lot is the base64 text exactly as carried in the token, so any
// implementation of the formula (docs/DESIGN.md, "Lottery number") agrees bit for bit.
//
// The result is 1.0 only when the 64-bit value rounds up to 2^64 (about once
// in 2^54 tickets); Threshold keeps that case finite.
func LotteryNumber(key []byte, lot string) float64 {
	return lotteryNumber(hmac.New(sha256.New, key), lot)
}

func lotteryNumber(mac hash.Hash, lot string) float64 {
	mac.Reset()
	_, _ = io.WriteString(mac, lot)
	var sum [sha256.Size]byte
	digest := mac.Sum(sum[:0])
	return float64(binary.BigEndian.Uint64(digest[:8])) / (1 << 64)
}

// maxThreshold bounds Threshold for v == 1: the threshold of the largest
// lottery number below 1 that a float64 can hold.
var maxThreshold = -math.Log1p(-math.Nextafter(1, 0))

// Threshold is the serving-clock distance a visitor with lottery number v must
// wait: they are eligible once S(now) - srv >= -ln(1 - v). Over uniform v this
// is an exponential draw with mean 1, so waits in seconds have mean tau.
func Threshold(v float64) float64 {
	if v >= 1 {
		return maxThreshold
	}
	return -math.Log1p(-v)
}
