package bridge

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"

	"github.com/agora/agorad/sync/agui"
	"github.com/agora/agorad/sync/protocol"
)

// What Options.StreamReplies streams to the device while the graph writes.
const (
	// StreamSpoken (the default) streams the graph's spoken version
	// (CUSTOM agui.SpokenEvent deltas); a graph that sends none is
	// answered at the end, as before streaming.
	StreamSpoken = "spoken"
	// StreamWritten streams the spoken version where the graph sends one,
	// else the written text (TEXT_MESSAGE_CONTENT): for graphs whose
	// written answer is meant to be said (the reference graph's writing
	// model), not for one that sets a shorter final_spoken at the end.
	StreamWritten = "written"
	// StreamOff answers every message at the end of its run.
	StreamOff = "off"
)

// StreamingAgent is an Agent that hands a run's streamed text over as it
// is read (*agui.Client).
type StreamingAgent interface {
	RunStream(ctx context.Context, in types.RunAgentInput, sink agui.Sink) (agui.Result, error)
}

// streamer sends one utterance's answer to the device in sentence-sized
// reply parts ("<reply id>.s<i>", the last "…e": protocol.StreamPartID) as
// the graph writes it. Each part is kept in the store before it is
// published and the publish is confirmed before the stream is read on, so
// the parts go in order; an attempt after a failed one, or after a crash
// (the parts kept are read back), numbers its pieces from 1 again and sends
// only those past the parts already sent: the device never gets a number
// twice, and hears the rest. The last part goes with the commit (finish),
// so a duplicate re-sends exactly the parts of the record.
type streamer struct {
	b      *Bridge
	agent  StreamingAgent
	store  streamStore
	device string
	env    protocol.Envelope
	base   protocol.ReplyCommand // id, in_reply_to, lang of every part
	sent   []protocol.ReplyCommand
	kept   int // parts kept before this message's first attempt here (a crash), re-sent once

	// this attempt
	cut      sentenceCutter
	n        int  // pieces cut so far
	spoken   bool // the graph streams a spoken version
	over     bool // past maxStreamParts: the rest is not streamed
	diverged bool // a piece differs from the part sent under its number before

	err error // keeping or publishing a part failed: redeliver, do not park
}

// maxStreamParts bounds the parts of one streamed answer (with the last):
// the parts the bridge keeps per run, about 1 h 45 min of speech.
const maxStreamParts = protocol.MaxSpeechParts

// newStreamer returns the streamer of an utterance's run, nil when answers
// are not streamed (StreamOff, an agent or store without streaming).
func (b *Bridge) newStreamer(device string, env protocol.Envelope, lang string) (*streamer, error) {
	agent, ok := b.o.Agent.(StreamingAgent)
	st, sok := b.o.Store.(streamStore)
	if b.o.StreamReplies == StreamOff || !ok || !sok {
		return nil, nil
	}
	s := &streamer{b: b, agent: agent, store: st, device: device, env: env,
		base: protocol.ReplyCommand{ID: "reply-" + env.ID, Type: protocol.CmdReply, InReplyTo: env.ID, Lang: lang}}
	raws, err := st.StreamParts(device, env.ID)
	if err != nil {
		return nil, err
	}
	for _, raw := range raws {
		var p protocol.ReplyCommand
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, fmt.Errorf("decode streamed part of %s/%s: %w", device, env.ID, err)
		}
		s.sent = append(s.sent, p)
	}
	s.kept = len(s.sent)
	if s.kept > 0 {
		b.log.Warn("answer was being streamed when the bridge stopped; the run goes again and the parts sent are not sent under new numbers",
			"device", device, "id", env.ID, "parts_sent", s.kept)
	}
	return s, nil
}

// run is one attempt: the run with its streamed text cut into parts.
func (s *streamer) run(ctx context.Context, in types.RunAgentInput) (agui.Result, error) {
	s.cut, s.n, s.spoken, s.over = sentenceCutter{limit: protocol.ReplyPartBytes}, 0, false, false
	if s.kept > 0 {
		// Parts kept before a crash go again first: one kept but not
		// confirmed may not have reached the broker. The device takes a
		// part it has by its id, once.
		if err := s.publish(ctx, s.sent[:s.kept]...); err != nil {
			return agui.Result{}, err
		}
		s.kept = 0
	}
	return s.agent.RunStream(ctx, in, func(kind, delta string) error { return s.take(ctx, kind, delta) })
}

// take is the sink: it picks the stream to say and sends the pieces cut.
func (s *streamer) take(ctx context.Context, kind, delta string) error {
	switch kind {
	case agui.StreamSpoken:
		if !s.spoken && s.n == 0 {
			// The spoken version wins over written text read so far.
			s.spoken, s.cut = true, sentenceCutter{limit: protocol.ReplyPartBytes}
		}
		if !s.spoken {
			return nil // written parts already went: keep to them
		}
	case agui.StreamText:
		if s.spoken || s.b.o.StreamReplies != StreamWritten {
			return nil
		}
	case agui.StreamStart:
		if s.spoken || s.b.o.StreamReplies != StreamWritten {
			return nil
		}
		delta = "\n" // a new message starts a new piece
	default:
		return nil
	}
	for _, piece := range s.cut.Write(delta) {
		if err := s.piece(ctx, piece); err != nil {
			return err
		}
	}
	return nil
}

// piece sends the next piece as a part with more to follow, unless a part
// of its number was sent before.
func (s *streamer) piece(ctx context.Context, text string) error {
	if s.over {
		return nil
	}
	if s.n+1 >= maxStreamParts {
		s.over = true // the last number is kept for the closing part
		return nil
	}
	s.n++
	if s.n <= len(s.sent) {
		if s.sent[s.n-1].Text != text && !s.diverged {
			s.diverged = true
			s.b.log.Warn("the graph's answer differs from the one being streamed before; the device goes on with the new one after the parts it has",
				"device", s.device, "id", s.env.ID, "part", s.n)
		}
		return nil
	}
	p := s.base
	p.ID, p.Text = protocol.StreamPartID(s.base.ID, s.n, false), text
	raw, err := json.Marshal(p)
	if err != nil {
		return s.fail(fmt.Errorf("encode streamed part %s: %w", p.ID, err))
	}
	if err := s.store.PutStreamPart(s.device, s.env.ID, s.n, raw); err != nil {
		return s.fail(err)
	}
	s.sent = append(s.sent, p)
	if err := s.publish(ctx, p); err != nil {
		return err
	}
	s.b.m.StreamParts.Inc()
	return nil
}

func (s *streamer) publish(ctx context.Context, parts ...protocol.ReplyCommand) error {
	if len(parts) == 0 {
		return nil
	}
	payloads := make([][]byte, len(parts))
	for i, p := range parts {
		raw, err := json.Marshal(p)
		if err != nil {
			return s.fail(fmt.Errorf("encode streamed part %s: %w", p.ID, err))
		}
		payloads[i] = raw
	}
	if err := s.b.o.Publisher.Publish(ctx, protocol.Topic(s.device, protocol.TopicCommands), payloads...); err != nil {
		return s.fail(fmt.Errorf("publish streamed part %s: %w", parts[len(parts)-1].ID, err))
	}
	return nil
}

// fail records an error of the bridge's own (store, broker): the run stops
// and the message is redelivered, not retried or parked.
func (s *streamer) fail(err error) error {
	if s.err == nil {
		s.err = err
	}
	return s.err
}

// end closes a streamed answer with its last part: the rest of the text,
// or, when failed, a short notice that the rest could not be given. It
// returns every part (for the record), nil when nothing was streamed (the
// answer goes whole, as before streaming: also an answer of one sentence,
// which is not cut before the run ends).
func (s *streamer) end(failed bool) []protocol.ReplyCommand {
	if s == nil || len(s.sent) == 0 {
		return nil
	}
	rest := s.cut.Flush()
	switch {
	case failed:
		rest = restFailed(s.base.Lang)
	case s.over:
		rest = restTooLong(s.base.Lang)
	case s.n < len(s.sent) || rest == "":
		// The device has heard more than this attempt wrote (a re-run
		// after a crash answered shorter), or the last piece was cut at
		// the bound: the last part only closes the answer.
		rest = "."
	}
	p := s.base
	p.ID, p.Text = protocol.StreamPartID(s.base.ID, len(s.sent)+1, true), rest
	out := append(append([]protocol.ReplyCommand(nil), s.sent...), p)
	return out
}

// restFailed is what the device says after the parts sent when the run
// failed mid-answer (the message is parked as any failed run).
func restFailed(lang string) string {
	if lang == "nl" {
		return "De rest van dit antwoord kon niet worden gegeven."
	}
	return "The rest of this answer could not be given."
}

// restTooLong closes an answer longer than maxStreamParts parts.
func restTooLong(lang string) string {
	if lang == "nl" {
		return "Dit antwoord is te lang om helemaal uit te spreken."
	}
	return "This answer is too long to say whole."
}

// dropStreamed drops the parts kept while streaming id once its record
// holds them (after the commit, and for a duplicate: parts left by a crash
// between the commit and the drop). A failure only leaves them as space.
func (b *Bridge) dropStreamed(device, id string, rec Record) {
	st, ok := b.o.Store.(streamStore)
	if !ok || len(rec.Stream) == 0 {
		return
	}
	if err := st.DropStreamParts(device, id); err != nil {
		b.log.Warn("dropping the parts kept while streaming an answer", "device", device, "id", id, "err", err)
	}
}
