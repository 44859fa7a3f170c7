// Command agoractl controls a running agorad over its unix control socket:
// status, mode switches, typed text, the listen buffer, the outbox and
// push-to-talk. Exit status: 0 success, 1 failure (daemon not running,
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
	"text/tabwriter"
	"time"

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
  flush                  send the listen buffer now as one batch (mode unchanged)
  ptt down|up            press or release push-to-talk

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

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseArgs(args)
	if err == nil {
		err = checkCommand(o)
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
	if err := execute(ctx, c, o, stdout); err != nil {
		fmt.Fprintf(stderr, "agoractl: %v\n", err)
		return 1
	}
	return 0
}

// checkCommand rejects malformed commands before connecting, so usage errors
// do not depend on whether the daemon runs.
func checkCommand(o options) error {
	a := o.args
	if len(a) == 0 {
		return usageError{"no command"}
	}
	nargs := func(n int) error {
		if len(a) != n {
			return usageError{fmt.Sprintf("%s: wrong number of arguments", strings.Join(a[:min(len(a), 2)], " "))}
		}
		return nil
	}
	switch a[0] {
	case "status", "outbox", "flush":
		return nargs(1)
	case "mode":
		if err := nargs(2); err != nil {
			return err
		}
		if a[1] != control.ModeListen && a[1] != control.ModeFeedback {
			return usageError{fmt.Sprintf("mode: %q is not listen or feedback", a[1])}
		}
	case "ptt":
		if err := nargs(2); err != nil {
			return err
		}
		if a[1] != "down" && a[1] != "up" {
			return usageError{fmt.Sprintf("ptt: %q is not down or up", a[1])}
		}
	case "say":
		if strings.TrimSpace(strings.Join(a[1:], " ")) == "" {
			return usageError{"say: no text"}
		}
	case "buffer":
		if len(a) < 2 {
			return usageError{"buffer: want list, export or clear"}
		}
		switch a[1] {
		case "list", "export":
			return nargs(2)
		case "clear":
			if err := nargs(2); err != nil {
				return err
			}
			if !o.yes {
				return usageError{"buffer clear deletes every item in the listen buffer; run it again with --yes"}
			}
		default:
			return usageError{fmt.Sprintf("buffer: unknown subcommand %q (want list, export or clear)", a[1])}
		}
	default:
		return usageError{fmt.Sprintf("unknown command %q", a[0])}
	}
	return nil
}

func execute(ctx context.Context, c *control.Client, o options, w io.Writer) error {
	a := o.args
	var (
		res   any
		err   error
		human func()
	)
	switch a[0] {
	case "status":
		var s control.Status
		s, err = c.Status(ctx)
		res, human = s, func() { printStatus(w, s) }
	case "mode":
		var m control.ModeResult
		m, err = c.SetMode(ctx, a[1])
		res, human = m, func() {
			fmt.Fprintf(w, "mode: %s -> %s\n", m.Previous, m.Mode)
			if m.Flushed > 0 {
				fmt.Fprintf(w, "%d buffered item(s) sent as one batch\n", m.Flushed)
			}
		}
	case "say":
		var s control.SayResult
		s, err = c.Say(ctx, strings.Join(a[1:], " "))
		res, human = s, func() { printSay(w, s) }
	case "buffer":
		switch a[1] {
		case "list":
			var l control.BufferList
			l, err = c.BufferList(ctx, o.limit)
			res, human = l, func() { printRecords(w, l) }
		case "export":
			// Always JSON lines: an export is for other programs.
			enc := json.NewEncoder(w)
			_, err = c.BufferExport(ctx, func(r control.Record) error { return enc.Encode(r) })
			if err != nil {
				return fmt.Errorf("buffer export: %w", err)
			}
			return nil
		case "clear":
			var r control.ClearResult
			r, err = c.BufferClear(ctx)
			res, human = r, func() { fmt.Fprintf(w, "deleted %d item(s) from the listen buffer\n", r.Deleted) }
		}
	case "outbox":
		var ob control.Outbox
		ob, err = c.Outbox(ctx, o.limit)
		res, human = ob, func() { printOutbox(w, ob) }
	case "flush":
		var f control.FlushResult
		f, err = c.Flush(ctx)
		res, human = f, func() {
			if f.Items == 0 {
				fmt.Fprintln(w, "listen buffer is empty: nothing to flush")
				return
			}
			fmt.Fprintf(w, "%d item(s) moved to the outbox as one batch (seq %d)\n", f.Items, f.Seq)
		}
	case "ptt":
		var p control.PTTResult
		p, err = c.PTT(ctx, a[1] == "down")
		res, human = p, func() {
			if p.Down {
				fmt.Fprintln(w, "push-to-talk: down (recording)")
			} else {
				fmt.Fprintln(w, "push-to-talk: up")
			}
		}
	}
	if err != nil {
		return err
	}
	if o.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	human()
	return nil
}

func printStatus(w io.Writer, s control.Status) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	link := "offline"
	if s.Online {
		link = "online"
	}
	fmt.Fprintf(tw, "device:\t%s\n", s.DeviceID)
	fmt.Fprintf(tw, "mode:\t%s\n", s.Mode)
	fmt.Fprintf(tw, "buffered:\t%d\n", s.Buffered)
	fmt.Fprintf(tw, "outbox:\t%d\n", s.Outbox)
	fmt.Fprintf(tw, "link:\t%s\n", link)
	if s.Unconfirmed > 0 {
		fmt.Fprintf(tw, "unconfirmed:\t%d (accepted by the broker, not confirmed by the backend: check ACLs and the bridge)\n", s.Unconfirmed)
	} else {
		fmt.Fprintf(tw, "unconfirmed:\t0\n")
	}
	if s.StuckSeconds > 0 {
		fmt.Fprintf(tw, "outbox stuck:\t%s\n", (time.Duration(s.StuckSeconds) * time.Second).String())
	}
	for _, p := range s.Problems {
		fmt.Fprintf(tw, "problem:\t%s\n", p)
	}
	if s.LastUtterance != nil {
		fmt.Fprintf(tw, "last utterance:\t%q at %s\n", s.LastUtterance.Text, s.LastUtterance.At.Local().Format(time.DateTime))
	} else {
		fmt.Fprintf(tw, "last utterance:\t-\n")
	}
	fmt.Fprintf(tw, "transcribed:\t%d utterance(s)\n", s.Transcriptions)
	fmt.Fprintf(tw, "model:\t%s\n", s.Model)
	fmt.Fprintf(tw, "version:\t%s\n", s.Version)
	fmt.Fprintf(tw, "uptime:\t%s\n", (time.Duration(s.UptimeSeconds) * time.Second).String())
	fmt.Fprintf(tw, "refused (store full):\t%d\n", s.Refused)
	tw.Flush()
}

func printSay(w io.Writer, s control.SayResult) {
	switch s.Action {
	case "feedback":
		fmt.Fprintln(w, "wake phrase: switched to feedback")
	case "listen":
		fmt.Fprintln(w, "wake phrase: switched to listen")
	}
	if s.Flushed > 0 {
		fmt.Fprintf(w, "%d buffered item(s) sent as one batch\n", s.Flushed)
	}
	switch s.Stored {
	case "listen_buffer":
		fmt.Fprintf(w, "stored in the listen buffer (%s)\n", s.ID)
	case "outbox":
		fmt.Fprintf(w, "queued for the backend (%s)\n", s.ID)
	default:
		fmt.Fprintln(w, "nothing stored")
	}
	fmt.Fprintf(w, "mode: %s\n", s.Mode)
}

func printRecords(w io.Writer, l control.BufferList) {
	if len(l.Records) == 0 {
		fmt.Fprintln(w, "listen buffer is empty")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tSTARTED\tSECS\tLANG\tTEXT")
	for _, r := range l.Records {
		fmt.Fprintf(tw, "%d\t%s\t%.1f\t%s\t%s\n", r.Seq, r.StartedAt.Local().Format(time.DateTime),
			float64(r.DurationMS)/1000, r.Lang, r.Text)
	}
	tw.Flush()
	if l.Total > len(l.Records) {
		fmt.Fprintf(w, "(%d of %d shown; --limit N for more)\n", len(l.Records), l.Total)
	}
}

func printOutbox(w io.Writer, ob control.Outbox) {
	link := "offline"
	if ob.Online {
		link = "online"
	}
	fmt.Fprintf(w, "%d entr%s waiting (%s)\n", ob.Count, map[bool]string{true: "y", false: "ies"}[ob.Count == 1], link)
	if len(ob.Entries) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tLANE\tKIND\tCREATED\tBYTES\tID")
	for _, e := range ob.Entries {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\n", e.Seq, e.Lane, e.Kind, e.CreatedAt.Local().Format(time.DateTime), e.Bytes, e.ID)
	}
	tw.Flush()
}
