package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/agora/agorad/cmd/internal/control"
)

// outbox [--limit N]: entries waiting for the broker; outbox drop ID: delete
// an entry the backend parked (it is kept until then).
func checkOutbox(o options) error {
	a := o.args
	switch {
	case len(a) == 1:
		return nil
	case a[1] == "drop" && len(a) == 3:
		return nil
	case a[1] == "drop":
		return usageError{"outbox drop: one entry id (agoractl status lists the parked ones)"}
	default:
		return usageError{fmt.Sprintf("outbox: unknown subcommand %q (want drop)", a[1])}
	}
}

func outbox(ctx context.Context, c *control.Client, o options, _ io.Writer) (result, error) {
	if len(o.args) == 3 {
		r, err := c.OutboxDrop(ctx, o.args[2])
		return result{r, func(w io.Writer) {
			fmt.Fprintf(w, "dropped seq %d %s (parked: %s)\n", r.Dropped.Seq, shown(r.Dropped.ID), shown(r.Dropped.Reason))
		}}, err
	}
	ob, err := c.Outbox(ctx, o.limit)
	return result{ob, func(w io.Writer) { printOutbox(w, ob) }}, err
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
