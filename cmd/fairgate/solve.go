package main

import (
	"context"
	"fmt"
	"github.com/fairgate/fairgate/admission/tokens"
	"io"
	"strconv"
)

// solve is `fairgate solve CHALLENGE DIFFICULTY`. It has no flags, so every
// argument is positional: a base64url challenge begins with '-' one time in
// 64, and the flag package would take it for an unknown flag. Only a lone
// -h asks for help; a leading `--` is accepted, as everywhere.
func solve(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 1 && isHelpFlag(args[0]) {
		return newFlags("solve", stdout).Parse(args)
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) != 2 {
		return usageErr("want CHALLENGE DIFFICULTY")
	}
	dif, err := strconv.Atoi(args[1])
	if err != nil {
		return usageErr("difficulty %q is not a number", args[1])
	}
	nonce, err := tokens.Solve(ctx, args[0], dif)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, nonce)
	return err
}

func isHelpFlag(arg string) bool {
	switch arg {
	case "-h", "-help", "--h", "--help":
		return true
	}
	return false
}
