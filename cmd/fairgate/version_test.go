package main

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestDescribeBuild(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	tests := []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build information", nil, false, "fairgate (no build information) " + runtime.Version() + " " + platform + "\n"},
		{"module version", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.1.0"}}, true,
			"fairgate v0.1.0\ngo1.26.8 " + platform + "\n"},
		{"checkout with VCS stamps", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "6b8faa9"}, {Key: "vcs.time", Value: "2026-11-23T08:00:00Z"}, {Key: "vcs.modified", Value: "true"},
		}}, true, "fairgate (devel)\ncommit 6b8faa9 (2026-11-23T08:00:00Z), modified\ngo1.26.8 " + platform + "\n"},
		{"no version at all", &debug.BuildInfo{GoVersion: "go1.26.8"}, true, "fairgate (devel)\ngo1.26.8 " + platform + "\n"},
	}
	for _, tt := range tests {
		if got := describeBuild(tt.info, tt.ok); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestVersionCommand(t *testing.T) {
	out, stderr, code := runCLI(t, "version")
	if code != 0 || stderr != "" || !strings.HasPrefix(out, "fairgate ") || !strings.Contains(out, runtime.Version()) {
		t.Fatalf("version: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}
