package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/agora/agorad/cmd/internal/control"
)

// buffer list [--limit N] | export | clear --yes: the listen buffer.
func checkBuffer(o options) error {
	a := o.args
	if len(a) < 2 {
		return usageError{"buffer: want list, export or clear"}
	}
	switch a[1] {
	case "list", "export":
		return nargs(2)(o)
	case "clear":
		if err := nargs(2)(o); err != nil {
			return err
		}
		if !o.yes {
			return usageError{"buffer clear deletes every item in the listen buffer; run it again with --yes"}
		}
		return nil
	default:
		return usageError{fmt.Sprintf("buffer: unknown subcommand %q (want list, export or clear)", a[1])}
	}
}

func buffer(ctx context.Context, c *control.Client, o options, out io.Writer) (result, error) {
	switch o.args[1] {
	case "list":
		l, err := c.BufferList(ctx, o.limit)
		return result{l, func(w io.Writer) { printRecords(w, l) }}, err
	case "export":
		// Always JSON lines: an export is for other programs.
		enc := json.NewEncoder(out)
		if _, err := c.BufferExport(ctx, func(r control.Record) error { return enc.Encode(r) }); err != nil {
			return result{}, fmt.Errorf("buffer export: %w", err)
		}
		return result{}, nil
	default: // clear; checkBuffer allows nothing else
		r, err := c.BufferClear(ctx)
		return result{r, func(w io.Writer) { fmt.Fprintf(w, "deleted %d item(s) from the listen buffer\n", r.Deleted) }}, err
	}
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
			float64(r.DurationMS)/1000, shown(r.Lang), shown(r.Text))
	}
	tw.Flush()
	if l.Total > len(l.Records) {
		fmt.Fprintf(w, "(%d of %d shown; --limit N for more)\n", len(l.Records), l.Total)
	}
}
