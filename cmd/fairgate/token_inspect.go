package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fairgate/fairgate/admission"

	"github.com/fairgate/fairgate/admission/queue"
	"github.com/fairgate/fairgate/admission/tokens"
)

// inspection is what `token inspect` prints, as JSON.
type inspection struct {
	Header map[string]any `json:"header"`
	Claims jwt.MapClaims  `json:"claims"`
	Kind   string         `json:"kind"`
	// With keys:
	Valid       *bool    `json:"valid,omitempty"`
	Reason      string   `json:"reason,omitempty"`
	Lottery     *string  `json:"lottery_number,omitempty"`
	Threshold   *float64 `json:"threshold,omitempty"`
	EligibleAt  *float64 `json:"eligible_at_clock,omitempty"`
	Explanation string   `json:"explanation,omitempty"`
}

// inspect is `fairgate token inspect TOKEN`: a token's claims and, with the
// keys, its validity, lottery number and when its visitor becomes eligible.
func inspect(args []string, stdout io.Writer, now time.Time) error {
	fs := newFlags("token inspect", stdout)
	keysFile := fs.String("keys", "", "key file (the JSON keygen prints) to verify with")
	room := fs.String("room", "", "room to verify for (default: the token's aud)")
	tau := fs.Duration("tau", 0, "mean wait at the room's current speed, to turn clock units into time")
	admin := fs.String("admin", "", "admin API of the room's front door, e.g. http://localhost:2019/waiting_room or http://127.0.0.1:9180, to read the live clock")
	adminToken := fs.String("admin-token", os.Getenv("FAIRGATE_ADMIN_TOKEN"), "bearer token for --admin (fairgate proxy)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErr("want one TOKEN")
	}
	tok := strings.TrimSpace(fs.Arg(0))
	// Unverified on purpose: the claims of a token that fails verification
	// are what an operator wants to see. WithJSONNumber prints them as sent.
	unverified := jwt.NewParser(jwt.WithJSONNumber())
	parsed, _, err := unverified.ParseUnverified(tok, jwt.MapClaims{})
	if err != nil {
		return fmt.Errorf("not a JWT: %w", err)
	}
	out := inspection{Header: parsed.Header, Claims: parsed.Claims.(jwt.MapClaims), Kind: "waiting token"}
	if _, ok := out.Claims["wid"]; ok {
		out.Kind = "pass"
	}
	if *keysFile == "" {
		return writeJSON(stdout, out)
	}
	ring, err := loadKeys(*keysFile)
	if err != nil {
		return err
	}
	if *room == "" {
		*room, _ = out.Claims["aud"].(string)
	}
	codec := tokens.NewCodec(ring, admission.DefaultPolicy.Leeway)
	valid := false
	out.Valid = &valid
	if out.Kind == "pass" {
		if _, err := codec.ParsePass(tok, *room, now); err != nil {
			out.Reason = err.Error()
		} else {
			valid = true
		}
		return writeJSON(stdout, out)
	}
	claims, err := codec.ParseWait(tok, *room, now)
	if err != nil {
		out.Reason = err.Error()
		if !errors.Is(err, tokens.ErrExpired) {
			return writeJSON(stdout, out)
		}
		// An expired token still tells why its visitor waited.
		claims = new(tokens.WaitClaims)
		if _, _, err := jwt.NewParser().ParseUnverified(tok, claims); err != nil {
			return writeJSON(stdout, out)
		}
	} else {
		valid = true
	}
	explain(&out, ring.Lottery(claims.Lot), claims, *tau)
	if *admin != "" {
		live, err := liveClock(*admin, *room, *adminToken)
		if err != nil {
			return err
		}
		out.Explanation += live.eta(*out.EligibleAt)
	}
	return writeJSON(stdout, out)
}

// explain fills in the lottery number v of a waiting token's ticket and
// the serving-clock reading at which its visitor becomes eligible.
func explain(out *inspection, v float64, claims *tokens.WaitClaims, tau time.Duration) {
	vs := strconv.FormatFloat(v, 'g', 17, 64)
	thr := queue.Threshold(v)
	at := claims.Srv + thr
	out.Lottery, out.Threshold, out.EligibleAt = &vs, &thr, &at
	out.Explanation = fmt.Sprintf("eligible once the room's serving clock reads %.4f: %.4f clock units after entry (srv %.4f); "+
		"one unit is one mean wait (tau)", at, thr, claims.Srv)
	if tau > 0 {
		out.Explanation += fmt.Sprintf("; at tau %v that is about %v of running clock after entry", tau,
			time.Duration(thr*float64(tau)).Round(time.Second))
	}
}

// roomFigures is what inspect needs of the admin API's room status.
type roomFigures struct {
	State      string  `json:"state"`
	Clock      float64 `json:"clock"`
	ClockSpeed float64 `json:"clock_speed"`
}

// eta says when a visitor eligible at clock reading at gets in, by the
// room's live clock.
func (f roomFigures) eta(at float64) string {
	switch {
	case f.Clock >= at:
		return fmt.Sprintf("; the room's clock reads %.4f: eligible now (admitted at the next attempt the bucket allows)", f.Clock)
	case f.ClockSpeed <= 0:
		return fmt.Sprintf("; the room's clock reads %.4f and stands still (%s): eligible once it runs again", f.Clock, f.State)
	default:
		eta := time.Duration((at - f.Clock) / f.ClockSpeed * float64(time.Second)).Round(time.Second)
		return fmt.Sprintf("; the room's clock reads %.4f at speed %.5f/s: eligible in about %v if the speed holds", f.Clock, f.ClockSpeed, eta)
	}
}

func liveClock(admin, room, token string) (roomFigures, error) {
	var f roomFigures
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(admin, "/")+"/rooms/"+url.PathEscape(room), nil)
	if err != nil {
		return f, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return f, fmt.Errorf("reading the room's clock: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return f, fmt.Errorf("reading the room's clock: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&f); err != nil {
		return f, fmt.Errorf("reading the room's clock: %w", err)
	}
	return f, nil
}
