package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/fairgate/fairgate/admission/tokens"
	"io"
	"net/http"
	"time"
)

// hookClient calls the admission hook.
type hookClient struct {
	timeout   time.Duration
	onFailure string
	client    *http.Client
}

func newHookClient(cfg Hook, client *http.Client) *hookClient {
	if client == nil {
		client = &http.Client{Transport: newTransport()}
	}
	return &hookClient{timeout: time.Duration(cfg.Timeout), onFailure: cfg.OnFailure, client: client}
}

type hookResult struct {
	admit   bool
	session string
	err     error // the hook failed: follow onFailure
}

// hookRequest is the body the hook receives; the pass itself is in the
// Fairgate-Pass header, as on every upstream request.
type hookRequest struct {
	Room    string `json:"room"`
	Subject string `json:"sub"`
	Wid     string `json:"wid"`
}

func (h *hookClient) call(ctx context.Context, url, room, pass string, claims *tokens.PassClaims) hookResult {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	body, _ := json.Marshal(hookRequest{Room: room, Subject: claims.Subject, Wid: claims.Wid})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return hookResult{err: fmt.Errorf("admission hook: %w", err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(passHeader, pass)
	// One pass, one session: a repeat of an admission whose answer was
	// lost carries the same pass id, and a hook that honours the key (the
	// seat service does) answers it with the session it opened the first
	// time instead of refusing a second one.
	req.Header.Set("Idempotency-Key", claims.ID)
	resp, err := h.client.Do(req)
	if err != nil {
		return hookResult{err: fmt.Errorf("admission hook: %w", err)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return hookResult{err: fmt.Errorf("admission hook: reading answer: %w", err)}
	}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		var out struct {
			Session string `json:"session"`
		}
		if len(bytes.TrimSpace(raw)) > 0 {
			if err := json.Unmarshal(raw, &out); err != nil {
				return hookResult{err: fmt.Errorf("admission hook: answer is not JSON: %w", err)}
			}
		}
		return hookResult{admit: true, session: out.Session}
	case resp.StatusCode == http.StatusConflict, resp.StatusCode == http.StatusTooManyRequests:
		return hookResult{}
	default:
		return hookResult{err: fmt.Errorf("admission hook: status %d", resp.StatusCode)}
	}
}
