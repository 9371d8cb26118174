package tokens

import "github.com/fairgate/fairgate/internal/wire"

// The claims of a token the codec signed are a flat JSON object: string
// and number values under the exact keys of the json tags.
// wire.AppendObject writes that shape and wire.DecodeObject reads it, at
// a fraction of encoding/json's cost (docs/BENCHMARKS.md, "Wire code");
// anything else makes them give up, and json.Marshal or json.Unmarshal
// takes over. FuzzEncodeClaims and FuzzDecodeClaims hold them to
// encoding/json.

// claimFields is a claims type wire.DecodeObject can fill.
type claimFields interface {
	// field is the address of the field key names by its json tag, or nil.
	field(key string) any
	// reset zeroes the claims, before json.Unmarshal takes over.
	reset()
}

func (r *Registered) field(key string) any {
	switch key {
	case "jti":
		return &r.ID
	case "aud":
		return &r.Audience
	case "sub":
		return &r.Subject
	case "iat":
		return &r.IssuedAt
	case "exp":
		return &r.ExpiresAt
	}
	return nil
}

func (c *WaitClaims) field(key string) any {
	switch key {
	case "lot":
		return &c.Lot
	case "srv":
		return &c.Srv
	case "ch":
		return &c.Ch
	case "dif":
		return &c.Dif
	case "nxt":
		return &c.Nxt
	case "bnd":
		return &c.Bnd
	case "lane":
		return &c.Lane
	case "pos":
		return &c.Pos
	case "lk":
		return &c.Lk
	}
	return c.Registered.field(key)
}

func (c *WaitClaims) reset() { *c = WaitClaims{} }

func (c *PassClaims) field(key string) any {
	switch key {
	case "wid":
		return &c.Wid
	case "ses":
		return &c.Ses
	case "bnd":
		return &c.Bnd
	}
	return c.Registered.field(key)
}

func (c *PassClaims) reset() { *c = PassClaims{} }

var (
	waitKeys = wire.KeysOf(&WaitClaims{}, new(WaitClaims).field)
	passKeys = wire.KeysOf(&PassClaims{}, new(PassClaims).field)
)

// encodeClaims appends claims as json.Marshal writes them, reporting
// false (having appended garbage) when it cannot; FuzzEncodeClaims holds
// it to json.Marshal's bytes.
func encodeClaims(b []byte, c claimFields) ([]byte, bool) {
	var ks wire.Keys
	switch c.(type) {
	case *WaitClaims:
		ks = waitKeys
	case *PassClaims:
		ks = passKeys
	default:
		return b, false
	}
	return wire.AppendObject(b, ks, c.field)
}

// decodeClaims fills dst from a flat JSON object of plain strings and
// numbers, reporting false where it cannot (dst is then partly filled).
func decodeClaims(b string, dst claimFields) bool { return wire.DecodeObject(b, dst.field) }
