package main

import (
	"context"
	"encoding/base64"
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

	"github.com/fairgate/fairgate/admission"
)

func keygen(_ context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("keygen", stdout)
	kid := fs.String("kid", time.Now().UTC().Format("2006-01-02"), "id of the new signing key")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := admission.GenerateKeys(*kid)
	if err != nil {
		return err
	}
	return writeJSON(stdout, cfg)
}

func solve(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("solve", stdout)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usageErr("want CHALLENGE DIFFICULTY")
	}
	dif, err := strconv.Atoi(fs.Arg(1))
	if err != nil {
		return usageErr("difficulty %q is not a number", fs.Arg(1))
	}
	nonce, err := admission.Solve(ctx, fs.Arg(0), dif)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, nonce)
	return err
}

func token(_ context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usageErr("want 'inspect' or 'lottery'")
	}
	switch args[0] {
	case "inspect":
		return inspect(args[1:], stdout, time.Now())
	case "lottery":
		return lottery(args[1:], stdout)
	}
	return usageErr("unknown token command %q", args[0])
}

func lottery(args []string, stdout io.Writer) error {
	fs := newFlags("token lottery", stdout)
	key := fs.String("key", "", "lottery key, base64")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *key == "" || fs.NArg() != 1 {
		return usageErr("want --key BASE64KEY LOT")
	}
	secret, err := base64.StdEncoding.DecodeString(*key)
	if err != nil {
		return usageErr("key is not base64: %v", err)
	}
	_, err = fmt.Fprintln(stdout, strconv.FormatFloat(admission.LotteryNumber(secret, fs.Arg(0)), 'g', 17, 64))
	return err
}

// inspection is what `token inspect` prints, as JSON.
type inspection struct {
	Header map[string]any  `json:"header"`
	Claims json.RawMessage `json:"claims"`
	Kind   string          `json:"kind"`
	// With keys:
	Valid       *bool    `json:"valid,omitempty"`
	Reason      string   `json:"reason,omitempty"`
	Lottery     *string  `json:"lottery_number,omitempty"`
	Threshold   *float64 `json:"threshold,omitempty"`
	EligibleAt  *float64 `json:"eligible_at_clock,omitempty"`
	Explanation string   `json:"explanation,omitempty"`
}

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
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return fmt.Errorf("not a JWT: %d segments", len(parts))
	}
	var out inspection
	header, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return fmt.Errorf("header is not base64url: %w", err)
	}
	if err := json.Unmarshal(header, &out.Header); err != nil {
		return fmt.Errorf("header is not JSON: %w", err)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return fmt.Errorf("claims are not base64url: %w", err)
	}
	var probe struct {
		Aud string `json:"aud"`
		Wid string `json:"wid"`
	}
	if err := json.Unmarshal(payload, &probe); err != nil {
		return fmt.Errorf("claims are not JSON: %w", err)
	}
	out.Claims = payload
	out.Kind = "waiting token"
	if probe.Wid != "" {
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
		*room = probe.Aud
	}
	codec := admission.NewCodec(ring, admission.DefaultPolicy.Leeway)
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
		if !errors.Is(err, admission.ErrExpired) {
			return writeJSON(stdout, out)
		}
		// An expired token still tells why its visitor waited.
		if err := json.Unmarshal(payload, &claims); err != nil {
			return writeJSON(stdout, out)
		}
	} else {
		valid = true
	}
	v := ring.Lottery(claims.Lot)
	vs := strconv.FormatFloat(v, 'g', 17, 64)
	thr := admission.Threshold(v)
	at := claims.Srv + thr
	out.Lottery, out.Threshold, out.EligibleAt = &vs, &thr, &at
	out.Explanation = fmt.Sprintf("eligible once the room's serving clock reads %.4f: %.4f clock units after entry (srv %.4f); "+
		"one unit is one mean wait (tau)", at, thr, claims.Srv)
	if *tau > 0 {
		out.Explanation += fmt.Sprintf("; at tau %v that is about %v of running clock after entry", *tau,
			time.Duration(thr*float64(*tau)).Round(time.Second))
	}
	if *admin != "" {
		live, err := liveClock(*admin, *room, *adminToken)
		if err != nil {
			return err
		}
		switch {
		case live.Clock >= at:
			out.Explanation += fmt.Sprintf("; the room's clock reads %.4f: eligible now (admitted at the next attempt the bucket allows)", live.Clock)
		case live.ClockSpeed <= 0:
			out.Explanation += fmt.Sprintf("; the room's clock reads %.4f and stands still (%s): eligible once it runs again", live.Clock, live.State)
		default:
			eta := time.Duration((at - live.Clock) / live.ClockSpeed * float64(time.Second)).Round(time.Second)
			out.Explanation += fmt.Sprintf("; the room's clock reads %.4f at speed %.5f/s: eligible in about %v if the speed holds", live.Clock, live.ClockSpeed, eta)
		}
	}
	return writeJSON(stdout, out)
}

// roomFigures is what inspect needs of the admin API's room status.
type roomFigures struct {
	State      string  `json:"state"`
	Clock      float64 `json:"clock"`
	ClockSpeed float64 `json:"clock_speed"`
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
	return f, json.NewDecoder(resp.Body).Decode(&f)
}

func loadKeys(path string) (*admission.KeyRing, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading keys: %w", err)
	}
	var cfg admission.KeysConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("parsing keys %s: %w", path, err)
	}
	ring, err := cfg.Load(admission.Environment{})
	if err != nil {
		return nil, fmt.Errorf("loading keys: %w", err)
	}
	return ring, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
