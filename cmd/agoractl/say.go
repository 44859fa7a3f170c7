package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/agora/agorad/cmd/internal/control"
)

// say TEXT...: handle typed text as if it had been spoken.
func checkSay(o options) error {
	if strings.TrimSpace(strings.Join(o.args[1:], " ")) == "" {
		return usageError{"say: no text"}
	}
	return nil
}

func say(ctx context.Context, c *control.Client, o options, _ io.Writer) (result, error) {
	s, err := c.Say(ctx, strings.Join(o.args[1:], " "))
	return result{s, func(w io.Writer) { printSay(w, s) }}, err
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
	case "sent_unstored":
		fmt.Fprintf(w, "the store has failed: sent to the backend without being stored (%s)\n", s.ID)
	case "held_in_memory":
		fmt.Fprintf(w, "the store has failed: held in memory until it writes again, lost if agorad stops first (%s)\n", s.ID)
	default:
		fmt.Fprintln(w, "nothing stored")
	}
	fmt.Fprintf(w, "mode: %s\n", s.Mode)
}
