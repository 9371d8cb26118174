// Package httpwire holds the hand-written wire code of the gateway's HTTP
// endpoints: the admit body, the waiting answer and the cookie lines and
// values. It is apart from package wire, whose general JSON codec the
// domain uses, so that the domain does not import net/http; wire's
// switch (wire.Fast, wire.SetFast) governs every piece here too, and each
// falls back to encoding/json or net/http when it is off.
package httpwire
