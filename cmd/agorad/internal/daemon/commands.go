package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/cmd/agorad/internal/textlang"
	"github.com/agora/agorad/cmd/internal/control"
	"github.com/agora/agorad/sync/protocol"
)

// commands carries out what the daemon is asked to do: agoractl over the
// control socket (control.Handler), the backend's commands over MQTT
// (uplink.CommandHandler) and SIGHUP (reload.go). Every change of mode goes
// through the router.
type commands struct {
	*core
	opts   Options
	speech *speech
	status *status
}

const defaultListLimit = 100

// Status answers agoractl status.
func (c *commands) Status(ctx context.Context) (control.Status, error) { return c.status.control() }

func (c *commands) SetMode(ctx context.Context, mode string) (control.ModeResult, error) {
	out, err := c.router.SetMode(ctx, buffer.Mode(mode))
	return control.ModeResult{Previous: string(out.ModeBefore), Mode: string(out.ModeAfter), Flushed: out.BatchCount}, err
}

// Say enters text exactly where a transcript would, so wake phrases and
// modes apply to typed notes and other apps' dictation too.
func (c *commands) Say(ctx context.Context, text string) (control.SayResult, error) {
	// Typed text has no transcriber to name its language: guess it, so the
	// note and the reply to it are not labelled replies.language blindly.
	lang := textlang.Guess(text)
	out, err := c.router.Handle(ctx, Heard{Text: text, Lang: lang, StartedAt: time.Now(), Source: "typed"})
	if err != nil {
		c.status.noteRefusal(err)
		return control.SayResult{}, err
	}
	c.langs.put(lang, out.ID, out.BatchID)
	res := control.SayResult{Action: string(out.Wake), Mode: string(out.ModeAfter), ID: out.ID, Flushed: out.BatchCount}
	switch {
	case out.KeptAs != "":
		res.Stored = out.KeptAs
	case out.Sent > 0:
		res.Stored = "outbox"
	case out.Stored > 0:
		res.Stored = "listen_buffer"
	}
	return res, nil
}

func (c *commands) BufferList(ctx context.Context, limit int) (control.BufferList, error) {
	if limit <= 0 {
		limit = defaultListLimit
	}
	n, err := c.store.ListenCount()
	if err != nil {
		return control.BufferList{}, fmt.Errorf("count listen buffer: %w", err)
	}
	recs, err := c.store.ListListen(limit)
	if err != nil {
		return control.BufferList{}, fmt.Errorf("list listen buffer: %w", err)
	}
	out := control.BufferList{Total: n, Records: make([]control.Record, 0, len(recs))}
	for _, r := range recs {
		out.Records = append(out.Records, toControl(r))
	}
	return out, nil
}

func (c *commands) BufferExport(ctx context.Context, emit func(control.Record) error) error {
	recs, err := c.store.ListListen(0)
	if err != nil {
		return fmt.Errorf("export listen buffer: %w", err)
	}
	for _, r := range recs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := emit(toControl(r)); err != nil {
			return err
		}
	}
	return nil
}

func (c *commands) BufferClear(ctx context.Context) (control.ClearResult, error) {
	n, err := c.store.ClearListen()
	if err != nil {
		return control.ClearResult{}, fmt.Errorf("clear listen buffer: %w", err)
	}
	c.log.Warn("listen buffer cleared by agoractl", "deleted", n)
	return control.ClearResult{Deleted: n}, nil
}

func (c *commands) Outbox(ctx context.Context, limit int) (control.Outbox, error) {
	if limit <= 0 {
		limit = defaultListLimit
	}
	n, err := c.store.OutboxCount()
	if err != nil {
		return control.Outbox{}, fmt.Errorf("count outbox: %w", err)
	}
	es, err := c.store.Pending(limit)
	if err != nil {
		return control.Outbox{}, fmt.Errorf("list outbox: %w", err)
	}
	out := control.Outbox{Count: n, Online: c.up.Online(), Entries: make([]control.OutboxEntry, 0, len(es))}
	for _, e := range es {
		lane := "data"
		if e.Lane == buffer.LaneControl {
			lane = "control"
		}
		out.Entries = append(out.Entries, control.OutboxEntry{
			ID: e.ID, Seq: e.Seq, Lane: lane, Kind: string(e.Kind), CreatedAt: e.CreatedAt, Offline: e.Offline, Bytes: len(e.Body),
		})
	}
	return out, nil
}

func (c *commands) Flush(ctx context.Context) (control.FlushResult, error) {
	out, err := c.router.Flush(ctx)
	return control.FlushResult{Items: out.BatchCount, EntryID: out.BatchID, Seq: out.BatchSeq}, err
}

func (c *commands) PTT(ctx context.Context, down bool) (control.PTTResult, error) {
	if classifyInput(c.cfg.Input.Source) != inputDevice && c.opts.OpenSource == nil {
		return control.PTTResult{}, fmt.Errorf("push-to-talk needs a microphone; input.source is %q", c.cfg.Input.Source)
	}
	c.speech.pushToTalk(down)
	return control.PTTResult{Down: down}, nil
}

func toControl(r buffer.Record) control.Record {
	return control.Record{
		ID: r.ID, Seq: r.Seq, Text: r.Text, Lang: r.Lang, Confidence: r.Confidence, StartedAt: r.StartedAt,
		DurationMS: r.DurationMS, Source: r.Source, Offline: r.Offline, AudioID: r.AudioID, CreatedAt: r.CreatedAt,
	}
}

// HandleCommand acts on the backend's set_mode, ping and reply (uplink.CommandHandler).
func (c *commands) HandleCommand(ctx context.Context, cmd protocol.Command) error {
	switch cmd.Type {
	case "set_mode":
		_, err := c.router.SetMode(ctx, cmd.Mode)
		return err
	case "ping":
		return nil
	case protocol.CmdReply:
		return c.replies.Receive(ctx, *cmd.Reply)
	default:
		return fmt.Errorf("command type %q not handled by the daemon", cmd.Type)
	}
}
