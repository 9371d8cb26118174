package gateway

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/fairgate/fairgate/gateway/pages"
	"github.com/fairgate/fairgate/internal/wire"
	"github.com/fairgate/fairgate/internal/wire/httpwire"
)

// TestTicketEitherWire: the waiting answer in every language is the same
// bytes and headers whether the hand-written code writes it or
// encoding/json does.
func TestTicketEitherWire(t *testing.T) {
	secs := 86400.0
	for _, l := range pages.Locales() {
		tk := ticketJSON{Room: "sale", State: "queue", Token: "eyJ.a-b_c.d", TokenPlain: true, Difficulty: 16,
			RetryAfter: 2.5, EstimateSeconds: &secs, EstimateKnown: true, Outcome: "wait",
			Lang: l.Name(), Message: l.StateMessage("queue", "wait", ""), Estimate: l.WaitText(secs, true)}
		var answers [2]*httptest.ResponseRecorder
		for i, on := range []bool{true, false} {
			was := wire.SetFast(on)
			answers[i] = httptest.NewRecorder()
			httpwire.WriteTicket(answers[i], http.StatusTooManyRequests, &tk)
			wire.SetFast(was)
		}
		fast, std := answers[0], answers[1]
		if fast.Code != std.Code || fast.Body.String() != std.Body.String() || !reflect.DeepEqual(fast.Header(), std.Header()) {
			t.Errorf("%s: hand-written %d %v %s\nencoding/json %d %v %s", l.Name(), fast.Code, fast.Header(), fast.Body,
				std.Code, std.Header(), std.Body)
		}
	}
}
