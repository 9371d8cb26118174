package main

import (
	"encoding/base64"
	"fmt"
	"github.com/fairgate/fairgate/admission/tokens"
	"io"
	"strconv"
)

// lottery is `fairgate token lottery --key KEY LOT`: a ticket's lottery
// number, to check another implementation against.
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
	_, err = fmt.Fprintln(stdout, strconv.FormatFloat(tokens.LotteryNumber(secret, fs.Arg(0)), 'g', 17, 64))
	return err
}
