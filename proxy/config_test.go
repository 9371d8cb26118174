package proxy

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Room: "bad room"}, {State: "busy"}, {State: "scheduled"}, {Rate: -1}, {Difficulty: intp(40)},
		{Prefix: "nope"}, {TrustedProxies: []string{"x"}}, {Hook: &Hook{}}, {Hook: &Hook{URL: "http://h", OnFailure: "maybe"}},
		{SaleStart: "tomorrow"}, {WaitingStatus: 42},
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

// TestCapacitySettles: capacity sizes the room with rate as its ceiling
// (the default rate when none is set) and a default active window;
// sessions, the other way of sizing by what the site holds, is refused
// beside it.
func TestCapacitySettles(t *testing.T) {
	s, err := Config{Capacity: 500}.settle()
	if err != nil {
		t.Fatal(err)
	}
	if s.Rate != DefaultRate || s.activeWindow != DefaultActiveWindow {
		t.Errorf("rate %v, active_window %v; want %v and %v", s.Rate, s.activeWindow, float64(DefaultRate), DefaultActiveWindow)
	}
	// A settled config settles again (a reload passes it on), with or
	// without capacity.
	plain, err := Config{}.settle()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []Config{s.Config, plain.Config} {
		if _, err := c.settle(); err != nil {
			t.Errorf("settling a settled config (capacity %d): %v", c.Capacity, err)
		}
	}
	_, err = Config{Capacity: 500, Sessions: 400}.settle()
	if err == nil || !strings.Contains(err.Error(), "capacity and sessions both size the room") {
		t.Errorf("capacity with sessions: %v, want the conflict refused", err)
	}
}

// TestConfigOptionErrors: a value wrong on its own is an *OptionError
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
		{Config{Rate: -1}, "rate", "rate -1"},
		{Config{Capacity: -5}, "capacity", "must be a positive number"},
		{Config{ActiveWindow: Duration(time.Minute)}, "active_window", "only applies with capacity"},
		{Config{Capacity: 10, ActiveWindow: Duration(-time.Minute)}, "active_window", "must not be negative"},
	} {
		_, err := tc.cfg.settle()
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Option != tc.option || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error of option %s", tc.cfg, err, tc.option)
		}
	}
}

func TestCheckExplicitZeros(t *testing.T) {
	for _, tc := range []struct {
		json, want string
	}{
		{`{"rate":0}`, "rate 0: must be a positive number of admissions per second; leave rate out for the default"},
		{`{"rate":-2}`, "rate -2"},
		{`{"rate":2}`, ""},
		{`{"capacity":0}`, "capacity 0: must be a positive number of active visitors"},
		{`{"capacity":-1}`, "capacity -1"},
		{`{"capacity":500,"rate":2}`, ""},
		{`{"room":"x"}`, ""},
	} {
		err := CheckExplicitZeros([]byte(tc.json))
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.json, err, tc.want)
		}
	}
}

// TestBoltPathChecks: what keeps a bolt file from ever opening fails the
// config, without opening the file; one file named two ways is one store.
func TestBoltPathChecks(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(file, "rooms.db"), file + " is a file, where a directory must be"},
		{filepath.Join(file, "a", "rooms.db"), file + " is a file, where a directory must be"},
		{dir, dir + " is a directory"},
		{filepath.Join(dir, "new", "rooms.db"), ""},
		{file, ""},
	} {
		st, err := settleStore(&StateStore{Type: StoreBolt, Path: tc.path}, "")
		if err != nil {
			t.Fatal(err)
		}
		err = st.CheckPath()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.path, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("checking made the directory: %v", err)
	}
	t.Chdir(dir)
	rel, _ := settleStore(&StateStore{Type: StoreBolt, Path: "rooms.db"}, "")
	abs, _ := settleStore(&StateStore{Type: StoreBolt, Path: filepath.Join(dir, "rooms.db")}, "")
	if rel.StateStore.StoreKey() != abs.StateStore.StoreKey() {
		t.Errorf("one file, two stores: %s and %s", rel.StateStore.StoreKey(), abs.StateStore.StoreKey())
	}
}
