// Package admission is fairgate's domain core: the room, its queue orders
// and the admission decision, over the ordering mechanisms of package
// queue (serving clock, bucket, pacer, place ledger) and the signed
// tokens, keys and proof of work of package tokens. It knows nothing of
// HTTP; package gateway and the Caddy module adapt it to requests.
//
// A visitor's whole queue state travels in their waiting token, so admission
// stores nothing per visitor except the ids of tokens already used.
package admission
