// Package tokens is what fairgate signs and checks: waiting tokens and
// passes (claims and their strict codec), the key ring that signs them and
// draws lottery numbers, and the proof-of-work challenges a waiting token
// carries. It knows nothing of rooms or ordering; package admission decides
// with what it verifies.
package tokens
