package main

import (
	"context"
	"io"
	"time"
)

// token is `fairgate token inspect|lottery`.
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
	if isHelpFlag(args[0]) {
		return newFlags("token", stdout).Parse(args[:1])
	}
	return usageErr("unknown token command %q", args[0])
}
