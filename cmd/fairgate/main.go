// Command fairgate is fairgate's one CLI: the waiting room's tools for
// operators and tests.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage: fairgate <command> [flags]

commands:
  keygen                       print new keys in the config format
  keys add --file FILE --kid KID
                               add a signing key to a key file and sign with it
                               (old keys still verify; the lottery key stays)
  token inspect [--keys FILE] TOKEN
                               show a token's claims and, with keys, its validity,
                               lottery number and when it becomes eligible
  token lottery --key KEY LOT  print a ticket's lottery number (17 significant digits)
  solve CHALLENGE DIFFICULTY   print a proof-of-work nonce
  sim [flags]                  run the fairness simulation (table and SVG plot)
  proxy --upstream URL [--listen ADDR] [--config FILE] [--admin ADDR]
                               the waiting room as a standalone reverse proxy
  seats [serve] --keys FILE [--store bolt|dynamodb] [--db FILE] [--listen ADDR] [--event ID]
                               the seat-reservation service
  seats layout [--id ID]       print a 20,000-seat stadium event as JSON
  seats init-tables            create the DynamoDB tables (--dynamodb-endpoint, --table-prefix)
  demo [--crowd N] [--sale-in 30s] [--listen ADDR]
                               a ticket shop behind the waiting room, in one process

Run 'fairgate <command> -h' for a command's flags.
`

// errUsage marks a usage error: exit status 2.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	commands := map[string]func(context.Context, []string, io.Writer) error{
		"keygen": keygen,
		"keys":   keysCommand,
		"token":  token,
		"solve":  solve,
		"sim":    simulate,
		"demo":   runDemo,
		"proxy":  runProxy,
		"seats":  seatsCommand,
	}
	cmd, ok := commands[args[0]]
	if !ok {
		if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
			fmt.Fprint(stdout, usage)
			return 0
		}
		fmt.Fprintf(stderr, "fairgate: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	err := cmd(ctx, args[1:], stdout)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "fairgate %s: %v\n", args[0], err)
		return 2
	default:
		fmt.Fprintf(stderr, "fairgate %s: %v\n", args[0], err)
		return 1
	}
}

// newFlags returns a flag set that reports errors instead of exiting.
func newFlags(name string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("fairgate "+name, flag.ContinueOnError)
	fs.SetOutput(out)
	return fs
}

func usageErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
}
