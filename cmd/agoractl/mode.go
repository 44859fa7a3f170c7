package main

import (
	"context"
	"fmt"
	"io"

	"github.com/agora/agorad/cmd/internal/control"
)

// mode listen|feedback: switch mode (to feedback: the listen buffer is sent
// as one batch).
func checkMode(o options) error {
	if err := nargs(2)(o); err != nil {
		return err
	}
	if m := o.args[1]; m != control.ModeListen && m != control.ModeFeedback {
		return usageError{fmt.Sprintf("mode: %q is not listen or feedback", m)}
	}
	return nil
}

func mode(ctx context.Context, c *control.Client, o options, _ io.Writer) (result, error) {
	m, err := c.SetMode(ctx, o.args[1])
	return result{m, func(w io.Writer) {
		fmt.Fprintf(w, "mode: %s -> %s\n", m.Previous, m.Mode)
		if m.Flushed > 0 {
			fmt.Fprintf(w, "%d buffered item(s) sent as one batch\n", m.Flushed)
		}
	}}, err
}
