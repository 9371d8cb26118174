package gateway

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/gateway/pages"
)

func wantsJSON(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	return strings.Contains(accept, "application/json") && !strings.Contains(accept, "text/html")
}

// serveWaiting answers a protected request without a pass: the waiting
// page for browsers, a JSON 429 for apps.
func (g *Gateway) serveWaiting(w http.ResponseWriter, r *http.Request, now time.Time) {
	// The estimate is the visitor's lane's (the default lane's without a
	// login); a refused login is answered when the page asks for a token.
	lane := ""
	if _, l, err := g.visitor(r, now); err == nil {
		lane = l
	}
	view := g.door.View(lane, now)
	est, known := view.EstimateWait(now)
	secs := math.Round(est.Seconds())
	lang, varies := g.pages.LocaleFor(r)
	if varies {
		w.Header().Add("Vary", "Accept-Language")
	}
	saleStart := ""
	if view.State == admission.StateScheduled && !view.SaleStart.IsZero() {
		saleStart = view.SaleStart.UTC().Format(time.RFC3339)
	}
	wait := pages.Wait{State: string(view.State), SaleStart: saleStart, Seconds: secs, Known: known}
	if wantsJSON(r) {
		st := statusJSON{Room: view.Name, State: string(view.State), Rate: view.Rate, SaleStart: saleStart, EstimateKnown: known}
		if known {
			st.EstimateSeconds = &secs
		}
		w.Header().Set("Retry-After", strconv.Itoa(int(time.Duration(g.cfg.MinBackoff).Seconds())))
		w.Header().Set("Link", fmt.Sprintf(`<%s/token>; rel="fairgate-token"`, g.cfg.Prefix))
		writeJSON(w, http.StatusTooManyRequests, struct {
			Error  errorBody   `json:"error"`
			Status statusJSON  `json:"status"`
			Page   *pages.JSON `json:"page"`
		}{errorBody{Code: "waiting_room", Message: "in the waiting room: POST " + g.cfg.Prefix + "/token to get a place"}, st,
			pages.WaitingJSON(lang, wait)})
		return
	}
	if err := g.pages.ServeWaiting(w, r, lang, wait, safeReturn(g.returnURI(r))); err != nil {
		writeError(w, http.StatusInternalServerError, "internal", "could not render the waiting page")
	}
}

func (g *Gateway) serveClosed(w http.ResponseWriter, r *http.Request) {
	lang, varies := g.pages.LocaleFor(r)
	if varies {
		w.Header().Add("Vary", "Accept-Language")
	}
	if wantsJSON(r) {
		g.writeClosedJSON(w, r)
		return
	}
	g.pages.ServeClosed(w, r, lang, g.shared.ClosedReason() == "sold_out")
}
