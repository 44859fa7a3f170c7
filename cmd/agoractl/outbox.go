package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/agora/agorad/cmd/internal/control"
)

// outbox [--limit N]: entries waiting for the broker.
func outbox(ctx context.Context, c *control.Client, o options, _ io.Writer) (result, error) {
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
