package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is `fairgate version`: what the Go toolchain stamped into the
// binary (module version, VCS revision and time, whether the tree was
// modified) and the Go version and platform.
func version(_ context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("version", stdout)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	_, err := fmt.Fprint(stdout, describeBuild(debug.ReadBuildInfo()))
	return err
}

// describeBuild formats build info, as ReadBuildInfo returns it.
func describeBuild(info *debug.BuildInfo, ok bool) string {
	if !ok {
		return fmt.Sprintf("fairgate (no build information) %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	out := fmt.Sprintf("fairgate %s\n", v)
	if rev := settings["vcs.revision"]; rev != "" {
		out += "commit " + rev
		if t := settings["vcs.time"]; t != "" {
			out += " (" + t + ")"
		}
		if settings["vcs.modified"] == "true" {
			out += ", modified"
		}
		out += "\n"
	}
	return out + fmt.Sprintf("%s %s/%s\n", info.GoVersion, runtime.GOOS, runtime.GOARCH)
}
