package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/agora/agorad/cmd/internal/control"
)

// replies [--limit N] | replies play [ID]: the backend's spoken answers.
func checkReplies(o options) error {
	a := o.args
	switch {
	case len(a) == 1:
		return nil
	case a[1] == "play" && len(a) <= 3:
		return nil
	case a[1] == "play":
		return usageError{"replies play: at most one reply id"}
	default:
		return usageError{fmt.Sprintf("replies: unknown subcommand %q (want play)", a[1])}
	}
}

func repliesCmd(ctx context.Context, c *control.Client, o options, _ io.Writer) (result, error) {
	if len(o.args) == 1 {
		r, err := c.Replies(ctx, o.limit)
		return result{r, func(w io.Writer) { printReplies(w, r) }}, err
	}
	id := ""
	if len(o.args) == 3 {
		id = o.args[2]
	}
	r, err := c.RepliesPlay(ctx, id)
	return result{r, func(w io.Writer) {
		if len(r.Replies) == 0 {
			fmt.Fprintln(w, "no reply waiting")
			return
		}
		for _, x := range r.Replies {
			fmt.Fprintf(w, "speaking %s: %s\n", shown(x.ID), shown(x.Text))
		}
	}}, err
}

func printReplies(w io.Writer, r control.RepliesResult) {
	if len(r.Replies) == 0 {
		fmt.Fprintln(w, "no replies")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RECEIVED\tID\tLANG\tSTATE\tTEXT")
	for _, x := range r.Replies {
		state := x.State
		if x.Reason != "" && x.State == "failed" {
			state += " (" + shown(x.Reason) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", x.ReceivedAt.Local().Format(time.DateTime), shown(x.ID), shown(x.Lang), state, shown(x.Text))
	}
	tw.Flush()
}

// stop: interrupt the reply being spoken.
func stopCmd(ctx context.Context, c *control.Client, _ options, _ io.Writer) (result, error) {
	r, err := c.Stop(ctx)
	return result{r, func(w io.Writer) {
		if r.Interrupted == "" {
			fmt.Fprintln(w, "nothing was being spoken")
		} else {
			fmt.Fprintf(w, "stopped reply %s\n", shown(r.Interrupted))
		}
	}}, err
}
