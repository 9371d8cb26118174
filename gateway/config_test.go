package gateway

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fairgate/fairgate/room"
)

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Config: room.Config{Room: "bad room"}}, {Config: room.Config{State: "busy"}}, {Config: room.Config{State: "scheduled"}},
		{Config: room.Config{Rate: -1}}, {Config: room.Config{Difficulty: intp(40)}},
		{Prefix: "nope"}, {TrustedProxies: []string{"x"}}, {Hook: &Hook{}}, {Hook: &Hook{URL: "http://h", OnFailure: "maybe"}},
		{Config: room.Config{SaleStart: "tomorrow"}}, {WaitingStatus: 42},
	} {
		if _, err := cfg.settle(); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
	var d Duration
	for in, want := range map[string]time.Duration{`"1m30s"`: 90 * time.Second, `1000`: 1000} {
		if err := json.Unmarshal([]byte(in), &d); err != nil || time.Duration(d) != want {
			t.Errorf("Duration %s = %v, %v", in, time.Duration(d), err)
		}
	}
	if err := json.Unmarshal([]byte(`"soon"`), &d); err == nil {
		t.Error("bad duration accepted")
	}
}

// TestConfigOptionErrors: a value wrong on its own is an *room.OptionError
// naming its option, so the Caddyfile points at the line that set it.
func TestConfigOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg    Config
		option string
		want   string
	}{
		{Config{Bypass: Bypass{UserAgents: []string{"("}}}, "bypass", "user_agents"},
		{Config{Bypass: Bypass{CIDRs: []string{"10.0.0.0/99"}}}, "bypass", "cidrs"},
		{Config{Cache: &Cache{Paths: []string{"static/*"}}}, "cache", "must start with /"},
		{Config{Bypass: Bypass{Paths: []string{"/a/[*"}}}, "bypass", "paths"},
		{Config{Config: room.Config{Rate: -1}}, "rate", "rate -1"},
		{Config{Config: room.Config{Capacity: -5}}, "capacity", "must be a positive number"},
		{Config{Config: room.Config{ActiveWindow: Duration(time.Minute)}}, "active_window", "only applies with capacity"},
		{Config{Config: room.Config{Capacity: 10, ActiveWindow: Duration(-time.Minute)}}, "active_window", "must not be negative"},
	} {
		_, err := tc.cfg.settle()
		var oe *room.OptionError
		if !errors.As(err, &oe) || oe.Option != tc.option || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error of option %s", tc.cfg, err, tc.option)
		}
	}
}
