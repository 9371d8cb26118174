// Command fairgate is fairgate's one CLI: the waiting room's front door
// (proxy), the seat service (seats), the demo, and tools for operators and
// tests. Each command lives in a file of its own, named after it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// command is one of fairgate's commands.
type command struct {
	name string
	run  func(ctx context.Context, args []string, stdout io.Writer) error
}

// commands lists every command, in the order the help shows them. (It is
// filled in by init: the commands' own help reads synopses.)
var commands []command

func init() {
	commands = []command{
		{"keygen", keygen}, {"keys", keysCommand}, {"token", token}, {"solve", solve}, {"sim", simulate},
		{"proxy", runProxy}, {"seats", seatsCommand}, {"demo", runDemo}, {"version", version},
	}
}

// synopses holds each command's usage lines, each followed by an indented
// description: the top-level help lists them, and a command's -h prints
// its own above its flags.
var synopses = map[string]string{
	"keygen": "keygen [--kid ID]\n    print new keys in the config format",
	"keys": "keys add --file FILE --kid KID\n" +
		"    add a signing key to a key file and sign with it (old keys still\n" +
		"    verify; the lottery key stays); then caddy reload --force",
	"token": "token inspect [--keys FILE] [--admin URL] [--tau D] TOKEN\n" +
		"    show a token's claims and, with keys, its validity, lottery number\n" +
		"    and when it becomes eligible\n" +
		"token lottery --key KEY LOT\n" +
		"    print a ticket's lottery number (17 significant digits)",
	"solve": "solve [--] CHALLENGE DIFFICULTY\n    print a proof-of-work nonce",
	"sim":   "sim [flags]\n    run the fairness simulation (table and SVG plot)",
	"proxy": "proxy --upstream URL [--listen ADDR] [--config FILE] [--admin ADDR]\n" +
		"    the waiting room as a standalone reverse proxy\n" +
		"proxy init-tables [--table T] [--region R] [--dynamodb-endpoint URL]\n" +
		"    create the DynamoDB room-state table",
	"seats": "seats [serve] --keys FILE [--store bolt|dynamodb] [--db FILE] [--listen ADDR] [--event ID]\n" +
		"    the seat-reservation service\n" +
		"seats layout [--id ID]\n" +
		"    print a 20,000-seat stadium event as JSON\n" +
		"seats init-tables [--dynamodb-endpoint URL] [--table-prefix P]\n" +
		"    create the DynamoDB tables",
	"demo": "demo [--crowd N] [--sale-in 30s] [--listen ADDR]\n" +
		"    a ticket shop behind the waiting room, in one process",
	"version": "version\n    print the version, commit and Go version of this binary",
}

// usage is the top-level help.
func usage() string {
	var b strings.Builder
	b.WriteString("usage: fairgate <command> [flags]\n\ncommands:\n")
	for _, c := range commands {
		b.WriteString(formatSynopsis(synopses[c.name], "  "))
	}
	b.WriteString("\nRun 'fairgate <command> -h' for a command's flags.\n")
	return b.String()
}

// formatSynopsis prefixes a synopsis's usage lines with prefix and indents
// their descriptions (the lines that begin with a space) by two spaces.
func formatSynopsis(synopsis, prefix string) string {
	var b strings.Builder
	for line := range strings.Lines(synopsis) {
		if strings.HasPrefix(line, " ") {
			b.WriteString("  ")
		} else {
			b.WriteString(prefix)
		}
		b.WriteString(strings.TrimSuffix(line, "\n") + "\n")
	}
	return b.String()
}

// errUsage marks a usage error: exit status 2.
var errUsage = errors.New("usage")

func usageErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command args name and returns the exit status: 0, 1 for a
// failure, 2 for a usage error. Every error is printed once, to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage())
		return 0
	}
	i := commandIndex(args[0])
	if i < 0 {
		fmt.Fprintf(stderr, "fairgate: unknown command %q\n\n%s", args[0], usage())
		return 2
	}
	err := commands[i].run(ctx, args[1:], stdout)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "fairgate %s: %v\n", args[0], err)
		return 2
	default:
		fmt.Fprintf(stderr, "fairgate %s: %v\n", args[0], err)
		return 1
	}
}

func commandIndex(name string) int {
	for i, c := range commands {
		if c.name == name {
			return i
		}
	}
	return -1
}

// flagSet is a command's flags. Parse differs from the flag package's in
// two ways: -h prints the command's synopsis and flags to its output, and a
// bad flag comes back as a usage error that run prints once (the flag
// package would print it as well).
type flagSet struct {
	*flag.FlagSet
	name string
	out  io.Writer
}

// newFlags returns the flag set of the command name ("seats", "token
// inspect"), whose help goes to out.
func newFlags(name string, out io.Writer) *flagSet {
	fs := flag.NewFlagSet("fairgate "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs, name: name, out: out}
}

func (f *flagSet) Parse(args []string) error {
	err := f.FlagSet.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		f.printHelp()
		return err
	default:
		return usageErr("%v (see 'fairgate %s -h')", err, f.name)
	}
}

// printHelp prints the synopsis of f's command (the lines of its top-level
// entry) and its flags.
func (f *flagSet) printHelp() {
	top, _, _ := strings.Cut(f.name, " ")
	fmt.Fprintf(f.out, "usage:\n%s", formatSynopsis(synopses[top], "  fairgate "))
	fmt.Fprintln(f.out, "\nflags:")
	f.SetOutput(f.out)
	f.PrintDefaults()
	f.SetOutput(io.Discard)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
