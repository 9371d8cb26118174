package proxy

import (
	"encoding/json"
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
