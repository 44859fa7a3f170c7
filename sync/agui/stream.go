package agui

import (
	"context"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"
)

// SpokenEvent is the name of the CUSTOM event in which a graph streams the
// spoken version of its answer as it writes it: the AGORA backend's own
// (its HAI contract: agora:spoken_text_start, _content, _end beside the
// TEXT_MESSAGE_* events, same messageId), value {"messageId": "...",
// "delta": "..."}, or the delta as a plain string. A graph that sends none
// streams nothing to speak (its final_spoken comes with the last state
// snapshot).
const SpokenEvent = "agora:spoken_text_content"

// Kinds of streamed text a Sink receives.
const (
	StreamStart  = "start"  // a new assistant message begins (TEXT_MESSAGE_START)
	StreamText   = "text"   // a written delta (TEXT_MESSAGE_CONTENT / _CHUNK)
	StreamSpoken = "spoken" // a spoken delta (CUSTOM SpokenEvent)
)

// Sink receives a run's streamed text while the stream is read, in order.
// An error it returns ends the run with that error (the caller's, e.g. the
// broker is gone); it must not hold on to the stream for long.
type Sink func(kind, delta string) error

func (s Sink) put(kind, delta string) error {
	if s == nil {
		return nil
	}
	return s(kind, delta)
}

// RunStream is Run handing the streamed text to sink as it is read.
func (c *Client) RunStream(ctx context.Context, in types.RunAgentInput, sink Sink) (Result, error) {
	return c.run(ctx, in, sink)
}

func spokenDelta(e *events.CustomEvent) (string, bool) {
	if e.Name != SpokenEvent {
		return "", false
	}
	switch v := e.Value.(type) {
	case string:
		return v, true
	case map[string]any:
		d, ok := v["delta"].(string)
		return d, ok
	}
	return "", false
}
