// Package admission is fairgate's domain core: signed waiting tokens and passes,
// the lottery number, proof-of-work challenges, the serving clock, rate control
// and the admission decision. It knows nothing of HTTP; the gateway in package
// proxy and the Caddy module adapt it to requests.
//
// A visitor's whole queue state travels in their waiting token, so admission
// stores nothing per visitor except the ids of tokens already used.
package admission
