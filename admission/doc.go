// Package admission is fairgate's domain core: the serving clock, the queue
// orders, rate control and the admission decision, over the signed tokens,
// keys and proof of work of package tokens. It knows nothing of HTTP; package
// gateway and the Caddy module adapt it to requests.
//
// A visitor's whole queue state travels in their waiting token, so admission
// stores nothing per visitor except the ids of tokens already used.
package admission
