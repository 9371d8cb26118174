package tokens

import (
	"encoding/base64"
	"encoding/binary"
	"slices"
)

const base64URLAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// appendBase64URL appends src as unpadded base64url: the bytes
// base64.RawURLEncoding.AppendEncode appends. Six bytes, read as one
// big-endian word, make eight characters a step, where the standard
// encoder reads three bytes for four: every poll encodes a token's
// claims and signature, and encoding is a large part of signing them.
func appendBase64URL(dst, src []byte) []byte {
	n := base64.RawURLEncoding.EncodedLen(len(src))
	dst = slices.Grow(dst, n)
	out := dst[len(dst) : len(dst)+n]
	for len(src) >= 8 { // a word is read while eight bytes are left
		x := binary.BigEndian.Uint64(src)
		_ = out[7]
		out[0] = base64URLAlphabet[x>>58]
		out[1] = base64URLAlphabet[x>>52&63]
		out[2] = base64URLAlphabet[x>>46&63]
		out[3] = base64URLAlphabet[x>>40&63]
		out[4] = base64URLAlphabet[x>>34&63]
		out[5] = base64URLAlphabet[x>>28&63]
		out[6] = base64URLAlphabet[x>>22&63]
		out[7] = base64URLAlphabet[x>>16&63]
		src, out = src[6:], out[8:]
	}
	base64.RawURLEncoding.Encode(out, src) // the last two to seven bytes
	return dst[:len(dst)+n]
}
