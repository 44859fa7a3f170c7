// Command agoractl controls a running agorad over its unix control socket:
// status, mode switches, typed text, the listen buffer, the outbox,
// push-to-talk and the spoken replies. Exit status: 0 success, 1 failure (daemon not running,
// request refused), 2 usage error.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/agora/agorad/cmd/internal/control"
)

const usage = `usage: agoractl [--socket PATH] [--json] COMMAND

commands:
  status                 mode, buffered items, outbox, link, last utterance
  mode listen|feedback   switch mode (to feedback: the listen buffer is sent as one batch)
  say TEXT...            handle typed text as if it had been spoken
  buffer list [--limit N]
  buffer export          every listen-buffer record as JSON lines
  buffer clear --yes     delete the listen buffer
  outbox [--limit N]     entries waiting for the broker
  outbox drop ID         delete an entry the backend refused and parked (kept until then)
  flush                  send the listen buffer now as one batch (mode unchanged)
  ptt down|up            press or release push-to-talk
  replies [--limit N]    the backend's replies with their outcome (spoken, held, expired, ...)
  replies play [ID]      speak a reply now (no ID: every reply waiting)
  stop                   stop speaking the current reply

flags (anywhere before --):
  --socket PATH  control socket (default $AGORAD_SOCKET or ` + control.DefaultSocket + `)
  --json         machine-readable output
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

type options struct {
	socket string
	json   bool
	yes    bool
	limit  int
	args   []string
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func parseArgs(args []string) (options, error) {
	o := options{socket: os.Getenv("AGORAD_SOCKET")}
	if o.socket == "" {
		o.socket = control.DefaultSocket
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			o.args = append(o.args, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			o.args = append(o.args, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		needVal := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(args) {
				return "", usageError{fmt.Sprintf("flag --%s needs a value", name)}
			}
			i++
			return args[i], nil
		}
		switch name {
		case "json":
			o.json = true
		case "yes", "y":
			o.yes = true
		case "socket":
			v, err := needVal()
			if err != nil {
				return o, err
			}
			o.socket = v
		case "limit":
			v, err := needVal()
			if err != nil {
				return o, err
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return o, usageError{fmt.Sprintf("--limit: %q is not a non-negative number", v)}
			}
			o.limit = n
		case "h", "help":
			return o, usageError{""}
		default:
			return o, usageError{fmt.Sprintf("unknown flag %s", a)}
		}
	}
	return o, nil
}

// command is one subcommand, in a file of its own. check rejects malformed
// arguments before connecting, so usage errors do not depend on whether the
// daemon runs; call asks the daemon.
type command struct {
	check func(o options) error
	call  func(ctx context.Context, c *control.Client, o options, w io.Writer) (result, error)
}

// result is a command's answer: value for --json, print for people. A
// command that wrote its own output returns the zero result.
type result struct {
	value any
	print func(w io.Writer)
}

var commands = map[string]command{
	"status": {check: nargs(1), call: status},
	"mode":   {check: checkMode, call: mode},
	"say":    {check: checkSay, call: say},
	"buffer": {check: checkBuffer, call: buffer},
	"outbox": {check: checkOutbox, call: outbox},
	"flush":  {check: nargs(1), call: flush},
	"ptt":    {check: checkPTT, call: ptt},

	"replies": {check: checkReplies, call: repliesCmd},
	"stop":    {check: nargs(1), call: stopCmd},
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseArgs(args)
	var cmd command
	if err == nil {
		cmd, err = lookup(o)
	}
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) && ue.msg == "" {
			fmt.Fprint(stdout, usage)
			return 0
		}
		fmt.Fprintf(stderr, "agoractl: %v\n\n%s", err, usage)
		return 2
	}
	c, err := control.Dial(o.socket)
	if err != nil {
		fmt.Fprintf(stderr, "agoractl: %v\n", err)
		return 1
	}
	defer c.Close()
	if err := execute(ctx, cmd, c, o, stdout); err != nil {
		fmt.Fprintf(stderr, "agoractl: %v\n", err)
		return 1
	}
	return 0
}

// lookup finds the command named by the first argument and checks its
// arguments.
func lookup(o options) (command, error) {
	if len(o.args) == 0 {
		return command{}, usageError{"no command"}
	}
	cmd, ok := commands[o.args[0]]
	if !ok {
		return command{}, usageError{fmt.Sprintf("unknown command %q", o.args[0])}
	}
	return cmd, cmd.check(o)
}

// nargs accepts exactly n arguments, the command's name included.
func nargs(n int) func(o options) error {
	return func(o options) error {
		if a := o.args; len(a) != n {
			return usageError{fmt.Sprintf("%s: wrong number of arguments", strings.Join(a[:min(len(a), 2)], " "))}
		}
		return nil
	}
}

func execute(ctx context.Context, cmd command, c *control.Client, o options, w io.Writer) error {
	res, err := cmd.call(ctx, c, o, w)
	switch {
	case err != nil:
		return err
	case res.value == nil:
		return nil
	case o.json:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res.value)
	}
	res.print(w)
	return nil
}
