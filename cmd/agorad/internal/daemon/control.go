package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/cmd/internal/control"
)

// controlHandler answers agoractl over the control socket.
type controlHandler struct{ d *Daemon }

const defaultListLimit = 100

func (h *controlHandler) Status(ctx context.Context) (control.Status, error) {
	d := h.d
	st := control.Status{
		DeviceID: d.cfg.DeviceID, Mode: d.router.Mode(), Online: d.up.Online(),
		Model: d.model, Version: d.opts.Version, UptimeSeconds: time.Since(d.started).Seconds(),
		Refused: d.refused.Load(), Transcriptions: d.heard.Load(),
	}
	us := d.up.Stats()
	st.Unconfirmed, st.StuckSeconds = us.Unconfirmed, us.StuckFor.Seconds()
	st.Problems = d.problems()
	var err error
	if st.Buffered, err = d.store.ListenCount(); err != nil {
		return st, fmt.Errorf("count listen buffer: %w", err)
	}
	if st.Outbox, err = d.store.OutboxCount(); err != nil {
		return st, fmt.Errorf("count outbox: %w", err)
	}
	if s, err := d.store.Stats(); err == nil {
		for _, n := range s.Refused {
			st.Refused += uint64(n)
		}
	}
	if last, at := d.router.Last(); !at.IsZero() {
		st.LastUtterance = &control.LastUtterance{Text: last.Text, At: at}
	}
	return st, nil
}

func (h *controlHandler) SetMode(ctx context.Context, mode string) (control.ModeResult, error) {
	out, err := h.d.router.SetMode(ctx, mode)
	return control.ModeResult{Previous: out.ModeBefore, Mode: out.ModeAfter, Flushed: out.BatchCount}, err
}

// Say enters text exactly where a transcript would, so wake phrases and
// modes apply to typed notes and other apps' dictation too.
func (h *controlHandler) Say(ctx context.Context, text string) (control.SayResult, error) {
	out, err := h.d.router.Handle(ctx, Heard{Text: text, StartedAt: time.Now(), Source: "typed"})
	if err != nil {
		h.d.noteRefusal(err)
		return control.SayResult{}, err
	}
	res := control.SayResult{Action: string(out.Wake), Mode: out.ModeAfter, ID: out.ID, Flushed: out.BatchCount}
	switch {
	case out.Sent > 0:
		res.Stored = "outbox"
	case out.Stored > 0:
		res.Stored = "listen_buffer"
	}
	return res, nil
}

func (h *controlHandler) BufferList(ctx context.Context, limit int) (control.BufferList, error) {
	if limit <= 0 {
		limit = defaultListLimit
	}
	n, err := h.d.store.ListenCount()
	if err != nil {
		return control.BufferList{}, fmt.Errorf("count listen buffer: %w", err)
	}
	recs, err := h.d.store.ListListen(limit)
	if err != nil {
		return control.BufferList{}, fmt.Errorf("list listen buffer: %w", err)
	}
	out := control.BufferList{Total: n, Records: make([]control.Record, 0, len(recs))}
	for _, r := range recs {
		out.Records = append(out.Records, toControl(r))
	}
	return out, nil
}

func (h *controlHandler) BufferExport(ctx context.Context, emit func(control.Record) error) error {
	recs, err := h.d.store.ListListen(0)
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

func (h *controlHandler) BufferClear(ctx context.Context) (control.ClearResult, error) {
	n, err := h.d.store.ClearListen()
	if err != nil {
		return control.ClearResult{}, fmt.Errorf("clear listen buffer: %w", err)
	}
	h.d.log.Warn("listen buffer cleared by agoractl", "deleted", n)
	return control.ClearResult{Deleted: n}, nil
}

func (h *controlHandler) Outbox(ctx context.Context, limit int) (control.Outbox, error) {
	if limit <= 0 {
		limit = defaultListLimit
	}
	n, err := h.d.store.OutboxCount()
	if err != nil {
		return control.Outbox{}, fmt.Errorf("count outbox: %w", err)
	}
	es, err := h.d.store.Pending(limit)
	if err != nil {
		return control.Outbox{}, fmt.Errorf("list outbox: %w", err)
	}
	out := control.Outbox{Count: n, Online: h.d.up.Online(), Entries: make([]control.OutboxEntry, 0, len(es))}
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

func (h *controlHandler) Flush(ctx context.Context) (control.FlushResult, error) {
	out, err := h.d.router.Flush(ctx)
	return control.FlushResult{Items: out.BatchCount, EntryID: out.BatchID, Seq: out.BatchSeq}, err
}

func (h *controlHandler) PTT(ctx context.Context, down bool) (control.PTTResult, error) {
	if classifyInput(h.d.cfg.Input.Source) != inputDevice && h.d.opts.OpenSource == nil {
		return control.PTTResult{}, fmt.Errorf("push-to-talk needs a microphone; input.source is %q", h.d.cfg.Input.Source)
	}
	h.d.pushToTalk(down)
	return control.PTTResult{Down: down}, nil
}

func toControl(r buffer.Record) control.Record {
	return control.Record{
		ID: r.ID, Seq: r.Seq, Text: r.Text, Lang: r.Lang, Confidence: r.Confidence, StartedAt: r.StartedAt,
		DurationMS: r.DurationMS, Source: r.Source, Offline: r.Offline, AudioID: r.AudioID, CreatedAt: r.CreatedAt,
	}
}
