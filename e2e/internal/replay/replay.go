// Package replay presents an admitted waiting token again, as the e2e
// drivers do to check that an admission is not given twice: the answer
// must be the used-token ledger's, not the bucket's.
package replay

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/fairgate/fairgate/e2e/internal/drive"
	"github.com/fairgate/fairgate/e2e/internal/pass"
	"github.com/fairgate/fairgate/e2e/internal/waiting"
)

// Tries is how many times Admit asks: a 429 (the bucket's slot, or a
// checkpoint ahead) is asked again after its retry_after, at most
// MaxWait, until the last try, whose answer is returned as it is.
const (
	Tries   = 4
	MaxWait = 2 * time.Second
)

// Admit posts an admit body (the token and nonce) to site's
// /_fairgate/admit and returns the status and body of the first answer
// that is not a 429, or of the last try.
func Admit(ctx context.Context, client *http.Client, site string, body []byte) (int, []byte, error) {
	for attempt := 1; ; attempt++ {
		status, answer, _, err := drive.Do(ctx, client, http.MethodPost, site+"/_fairgate/admit", body, "")
		if err != nil || status != http.StatusTooManyRequests || attempt == Tries {
			return status, answer, err
		}
		var tk waiting.Answer
		_ = json.Unmarshal(answer, &tk)
		drive.Sleep(ctx, min(MaxWait, tk.Wait()+10*time.Millisecond))
		if ctx.Err() != nil {
			return 0, nil, ctx.Err()
		}
	}
}

// Again reports whether an admit answer carries a pass other than the one
// the place was first admitted with (firstID, that pass's jti; "" when it
// is not known): a second admission. The same pass again is the token's own
// admission answered once more (its first answer may have been lost).
func Again(answer []byte, firstID string) bool {
	var a struct {
		Pass string `json:"pass"`
	}
	_ = json.Unmarshal(answer, &a)
	return firstID == "" || pass.ID(a.Pass) != firstID
}
