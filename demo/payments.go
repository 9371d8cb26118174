package demo

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/fairgate/fairgate/seats/httpapi"
)

// demoPaymentProvider is the demo's fake payment provider. DEMO ONLY: it
// approves every card without charging anything. It plays the part a real
// provider's webhook (or a shop backend that has verified the payment)
// plays in production: it confirms the checkout with the seat service
// server to server, signed with the payment key, which no browser holds.
type demoPaymentProvider struct {
	key   []byte
	seats *url.URL
}

var paymentClient = &http.Client{Timeout: 10 * time.Second}

// pay handles the shop's "Pay" button: approve (fake), then confirm with
// the seat service, passing on the visitor's pass and Idempotency-Key.
func (p *demoPaymentProvider) pay(w http.ResponseWriter, r *http.Request) {
	session := r.PathValue("session")
	ref := "demo-" + rand.Text()[:8]
	body, err := json.Marshal(map[string]string{"payment_ref": ref})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, p.seats.JoinPath("/api/sessions", session, "confirm").String(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, "bad session", http.StatusBadRequest)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(httpapi.PassHeader, r.Header.Get(httpapi.PassHeader))
	req.Header.Set(httpapi.PaymentSignatureHeader, httpapi.SignPayment(p.key, session, ref))
	if k := r.Header.Get("Idempotency-Key"); k != "" {
		req.Header.Set("Idempotency-Key", k)
	}
	relayJSON(w, paymentClient, req, "the seat service is unreachable")
}
