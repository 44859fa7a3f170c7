package main

import (
	"context"
	"fmt"
	"io"

	"github.com/agora/agorad/cmd/internal/control"
)

// flush: send the listen buffer now as one batch (mode unchanged).
func flush(ctx context.Context, c *control.Client, _ options, _ io.Writer) (result, error) {
	f, err := c.Flush(ctx)
	return result{f, func(w io.Writer) {
		if f.Items == 0 {
			fmt.Fprintln(w, "listen buffer is empty: nothing to flush")
			return
		}
		fmt.Fprintf(w, "%d item(s) moved to the outbox as one batch (seq %d)\n", f.Items, f.Seq)
	}}, err
}
