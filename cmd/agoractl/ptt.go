package main

import (
	"context"
	"fmt"
	"io"

	"github.com/agora/agorad/cmd/internal/control"
)

// ptt down|up: press or release push-to-talk.
func checkPTT(o options) error {
	if err := nargs(2)(o); err != nil {
		return err
	}
	if a := o.args[1]; a != "down" && a != "up" {
		return usageError{fmt.Sprintf("ptt: %q is not down or up", a)}
	}
	return nil
}

func ptt(ctx context.Context, c *control.Client, o options, _ io.Writer) (result, error) {
	p, err := c.PTT(ctx, o.args[1] == "down")
	return result{p, func(w io.Writer) {
		if p.Down {
			fmt.Fprintln(w, "push-to-talk: down (recording)")
		} else {
			fmt.Fprintln(w, "push-to-talk: up")
		}
	}}, err
}
