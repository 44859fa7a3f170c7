package daemon

import (
	"context"
	"fmt"
	"sync"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/tts"
	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/cmd/agorad/internal/replies"
	"github.com/agora/agorad/cmd/internal/control"
)

// newReplies builds the reply player (issue 7). An engine or voice that does
// not load is logged once, loudly, and the daemon runs with earcons only;
// the replies are still stored, listed and acknowledged (failed). The engine
// is returned for the daemon to close.
func newReplies(d *core) (*replies.Player, tts.Engine, error) {
	rc := d.cfg.Replies
	var engine tts.Engine
	var engineErr error
	if rc.Enabled {
		engine, engineErr = tts.New(tts.Config{Engine: rc.Engine, Voices: map[string]string{"nl": rc.Voices.NL, "en": rc.Voices.EN},
			Rate: rc.Rate, Volume: rc.Volume})
		if engineErr != nil {
			d.log.Error("speech synthesis unavailable: replies are not spoken, earcons only", "err", engineErr)
		} else {
			d.log.Info("speech synthesis ready", "engine", engine.Name())
		}
	} else {
		engineErr = fmt.Errorf("replies.enabled is false")
	}
	p, err := replies.New(replies.Options{
		Store: d.store, Engine: engine, EngineErr: engineErr,
		Speaker: d.sounds.speaker,
		Earcon:  d.sounds.Play,
		Mode:    func() string { return string(d.router.Mode()) },
		Online:  d.up.Online,
		LangOf:  d.langs.get, DefaultLang: rc.Language,
		MaxAge: rc.MaxAge.D(), MaxChars: rc.MaxChars, PartWait: rc.PartWait.D(), HalfDuplex: rc.HalfDuplex, Tail: rc.Tail.D(),
		Metrics:    d.met.NewReplies(),
		Turns:      d.turns,
		Logger:     d.log,
		AfterStore: testHookReplyStored,
	})
	if err != nil {
		if engine != nil {
			engine.Close()
		}
		return nil, nil, fmt.Errorf("replies: %w", err)
	}
	return p, engine, nil
}

// testHookReplyStored runs after a reply is stored, before the broker is
// acknowledged (the kill -9 test stops the process there).
var testHookReplyStored func(id string)

// langMemo remembers the language of recent utterances and batches by id, so
// a reply without lang is spoken in the language of what it answers.
type langMemo struct {
	mu    sync.Mutex
	order []string
	lang  map[string]string
}

const langMemoSize = 256

func (m *langMemo) put(lang string, ids ...string) {
	if lang != "nl" && lang != "en" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lang == nil {
		m.lang = map[string]string{}
	}
	for _, id := range ids {
		if id == "" {
			continue
		}
		if _, ok := m.lang[id]; !ok {
			m.order = append(m.order, id)
		}
		m.lang[id] = lang
	}
	for len(m.order) > langMemoSize {
		delete(m.lang, m.order[0])
		m.order = m.order[1:]
	}
}

func (m *langMemo) get(id string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lang[id]
}

// speaker returns the player earcons use, opening it if needed: speech and
// earcons share one output stream, so an earcon never plays over speech.
// It opens even when earcons are off (sounds.enabled false).
func (s *sounder) speaker() (replies.Speaker, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.player == nil {
		p, err := audio.OpenPlayer(audio.PlayerOptions{Device: s.cfg.Device, Volume: s.cfg.Volume, Logger: s.log})
		if err != nil {
			return nil, fmt.Errorf("open speaker %q: %w", s.cfg.Device, err)
		}
		s.player, s.tried = p, true
	}
	return s.player, nil
}

func (c *commands) Replies(ctx context.Context, limit int) (control.RepliesResult, error) {
	if limit <= 0 {
		limit = defaultListLimit
	}
	rs, err := c.replies.List(limit)
	if err != nil {
		return control.RepliesResult{}, err
	}
	return toControlReplies(rs), nil
}

func (c *commands) RepliesPlay(ctx context.Context, id string) (control.RepliesResult, error) {
	rs, err := c.replies.Play(id)
	if err != nil {
		return control.RepliesResult{}, err
	}
	return toControlReplies(rs), nil
}

func (c *commands) Stop(ctx context.Context) (control.StopResult, error) {
	return control.StopResult{Interrupted: c.replies.Stop()}, nil
}

func toControlReplies(rs []buffer.Reply) control.RepliesResult {
	out := control.RepliesResult{Replies: make([]control.Reply, 0, len(rs))}
	for _, r := range rs {
		out.Replies = append(out.Replies, control.Reply{ID: r.ID, InReplyTo: r.InReplyTo, Text: r.Text, Lang: r.Lang,
			Urgent: r.Urgent, State: string(r.State), Reason: r.Reason, Plays: r.Plays, ReceivedAt: r.ReceivedAt, ExpiresAt: r.ExpiresAt})
	}
	return out
}

// speechStatus fills the reply fields of agoractl status.
func speechStatus(p *replies.Player, st *control.Status) {
	if p == nil {
		return
	}
	rs := p.Status()
	st.Speaking, st.RepliesWaiting = rs.Speaking, rs.Waiting
	if rs.EngineError != "" {
		st.Speech = "off (earcons only): " + rs.EngineError
	} else {
		st.Speech = rs.Engine
	}
}

// muteEcho is the half-duplex gate on the hands-free path: while the device
// speaks (and for the tail after) the microphone's samples are replaced by
// silence, so the segmenter keeps its stream offsets and hears nothing.
func (sp *speech) muteEcho(c audio.Chunk) audio.Chunk {
	if sp.replies == nil || !sp.replies.Muted() {
		return c
	}
	c.Samples = make([]float32, len(c.Samples))
	return c
}
