package replies

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/tts"
	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/protocol"
)

// Store is what the player needs from *buffer.Store.
type Store interface {
	AddReply(r buffer.Reply) (buffer.Reply, bool, error)
	UpdateReply(id string, state buffer.ReplyState, reason string, ack []byte, offline bool) (buffer.Reply, error)
	GetReply(id string) (buffer.Reply, error)
	ListReplies(limit int, open bool) ([]buffer.Reply, error)
	// OpenReplies and ReplyCounts read through the store's reply index:
	// their cost does not grow with the finished replies kept.
	OpenReplies(limit int) ([]buffer.Reply, error)
	ReplyCounts() (open, finished int)
}

// Speaker plays a synthesized stream (*audio.Player).
type Speaker interface {
	PlayStream(ctx context.Context, src audio.SampleReader, started func(time.Time)) (<-chan error, error)
}

// Metrics records replies (*metrics.Replies); nil records nothing.
type Metrics interface {
	Received(duplicate bool)
	Outcome(outcome string)
	FirstAudio(d time.Duration)
	SetState(speaking bool, waiting int)
}

// Turns times the turn a reply answers, by the id of the utterance it
// answers (*turns.Clock).
type Turns interface {
	Replied(utteranceID string, at time.Time)
	FirstAudio(utteranceID string, at time.Time)
}

// Options configure a Player.
type Options struct {
	Store Store
	// Engine synthesizes speech; nil means earcons only (EngineErr says
	// why), and every reply is acknowledged failed.
	Engine    tts.Engine
	EngineErr error
	// Speaker returns the output (opened on first use).
	Speaker func() (Speaker, error)
	// Earcon plays a short sound ("reply_waiting"); may be nil.
	Earcon func(name string)
	// Mode returns "listen" or "feedback"; Online whether the uplink is up
	// (acks are marked offline otherwise).
	Mode   func() string
	Online func() bool
	// Lang is the language of a reply without one: LangOf(in_reply_to)
	// when it knows the utterance, else DefaultLang.
	LangOf      func(utteranceID string) string
	DefaultLang string
	MaxAge      time.Duration // expiry of a reply without expires_at
	MaxChars    int           // synthesis piece size; longer text is spoken whole, in pieces (pieces.go)
	// PartWait is how long a reply part waits for a missing part before
	// it, after the part before that ended (or its own arrival); then the
	// device says the part is missing and goes on (parts.go). 0: 30 s.
	PartWait   time.Duration
	HalfDuplex bool
	Tail       time.Duration // muted after speech ends (half duplex)
	Metrics    Metrics
	Turns      Turns // nil: turns are not timed
	Logger     *slog.Logger
	// AfterStore, when set, runs after a new reply was stored and before
	// Receive returns (tests kill the process there).
	AfterStore func(id string)
}

// errFinished: the reply was finished by someone else since it was read.
var errFinished = errors.New("reply finished meanwhile")

// Status is what agoractl status shows.
type Status struct {
	Speaking    string // id of the reply being spoken, "" when silent
	Waiting     int    // queued or held
	Engine      string // engine and voices, "" when none loaded
	EngineError string // why speech is off (earcons only)
}

// Player speaks replies. Create with New, run with Run.
type Player struct {
	o   Options
	log *slog.Logger

	wake chan struct{}

	// fin serialises outcomes: Receive (dropping the oldest waiting reply)
	// and Run (holding, expiring, speaking) never finish one reply twice.
	fin sync.Mutex

	mu         sync.Mutex
	speaking   string             // id being spoken
	cancel     context.CancelFunc // interrupts the current playback
	interrupt  string             // why it was interrupted
	ptt        bool               // key held: start nothing
	mutedUntil time.Time
	requested  map[string]bool // ids asked for by `replies play`
	arrived    map[string]time.Time
	waiting    int
}

// New checks the options.
func New(o Options) (*Player, error) {
	if o.Store == nil || o.Speaker == nil || o.Mode == nil {
		return nil, errors.New("replies: store, speaker and mode are required")
	}
	if o.DefaultLang != "nl" && o.DefaultLang != "en" {
		return nil, fmt.Errorf("replies: default language %q is not nl or en", o.DefaultLang)
	}
	if o.MaxAge <= 0 {
		return nil, fmt.Errorf("replies: max_age %v must be positive", o.MaxAge)
	}
	if o.PartWait <= 0 {
		o.PartWait = 30 * time.Second
	}
	if o.Online == nil {
		o.Online = func() bool { return true }
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Player{o: o, log: o.Logger.With("component", "replies"), wake: make(chan struct{}, 1),
		requested: map[string]bool{}, arrived: map[string]time.Time{}}, nil
}

func (p *Player) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Receive stores a reply from the backend (de-duplicated by id) and queues
// it. It returns only once the reply is stored, so the caller may then
// acknowledge the command to the broker; an error means it was not stored.
func (p *Player) Receive(ctx context.Context, r protocol.Reply) error {
	arrival := time.Now()
	lang := r.Lang
	if lang == "" && r.InReplyTo != "" && p.o.LangOf != nil {
		lang = p.o.LangOf(r.InReplyTo)
	}
	if lang != "nl" && lang != "en" {
		lang = p.o.DefaultLang
	}
	// max_age bounds every reply, also one whose expires_at is later (a
	// far-future expires_at would keep it open, and counted, for good).
	exp := r.ExpiresAt
	if limit := arrival.Add(p.o.MaxAge); exp.IsZero() || exp.After(limit) {
		exp = limit
	}
	if err := p.makeRoom(r.ID); err != nil {
		return fmt.Errorf("store reply %s: %w", r.ID, err)
	}
	stored, added, err := p.o.Store.AddReply(buffer.Reply{ID: r.ID, InReplyTo: r.InReplyTo, Text: r.Text, Spoken: r.Spoken,
		Lang: lang, Urgent: r.Urgent, ExpiresAt: exp.UTC()})
	if err != nil {
		return fmt.Errorf("store reply %s: %w", r.ID, err)
	}
	if p.o.Metrics != nil {
		p.o.Metrics.Received(!added)
	}
	if !added {
		p.log.Info("reply redelivered; already stored, not queued again", "id", r.ID, "state", stored.State)
		return nil
	}
	if p.o.AfterStore != nil {
		p.o.AfterStore(r.ID)
	}
	p.mu.Lock()
	p.arrived[r.ID] = arrival
	p.mu.Unlock()
	if p.o.Turns != nil && r.InReplyTo != "" {
		p.o.Turns.Replied(r.InReplyTo, arrival)
	}
	p.log.Info("reply received", "id", r.ID, "in_reply_to", r.InReplyTo, "lang", lang, "urgent", r.Urgent, "chars", len(r.Text))
	p.poke()
	return nil
}

// Wake makes the player look at its queue again (after a mode change).
func (p *Player) Wake() { p.poke() }

// SetPTT is the push-to-talk key: down interrupts speech at once (barge-in)
// and holds the queue until the key is released.
func (p *Player) SetPTT(down bool) {
	p.mu.Lock()
	p.ptt = down
	if down && p.cancel != nil {
		p.interrupt = "push-to-talk"
		p.cancel()
	}
	p.mu.Unlock()
	if !down {
		p.poke()
	}
}

// Stop interrupts the reply being spoken (agoractl stop); the queue goes
// on. It reports the id that was interrupted, "" when nothing was spoken.
func (p *Player) Stop() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cancel == nil {
		return ""
	}
	p.interrupt = "stopped"
	p.cancel()
	return p.speaking
}

// Play asks for a reply to be spoken now: id "" means every held reply; a
// finished reply (spoken, interrupted, failed) is spoken again. An expired
// reply is never spoken.
func (p *Player) Play(id string) ([]buffer.Reply, error) {
	var want []buffer.Reply
	if id == "" {
		open, err := p.o.Store.OpenReplies(0)
		if err != nil {
			return nil, err
		}
		want = open
	} else {
		r, err := p.o.Store.GetReply(id)
		if err != nil {
			return nil, err
		}
		if r.State == buffer.ReplyExpired || time.Now().After(r.ExpiresAt) {
			return nil, fmt.Errorf("reply %s expired at %s: expired replies are not spoken", id, r.ExpiresAt.Format(time.RFC3339))
		}
		want = []buffer.Reply{r}
	}
	p.mu.Lock()
	for _, r := range want {
		p.requested[r.ID] = true
	}
	p.mu.Unlock()
	p.poke()
	return want, nil
}

// Muted is the half-duplex gate: true while a reply is spoken and for Tail
// after, when half duplex is on.
func (p *Player) Muted() bool {
	if !p.o.HalfDuplex {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.speaking != "" || time.Now().Before(p.mutedUntil)
}

// Status reports speaking, waiting and the engine.
func (p *Player) Status() Status {
	p.mu.Lock()
	st := Status{Speaking: p.speaking, Waiting: p.waiting}
	p.mu.Unlock()
	if p.o.Engine != nil {
		st.Engine = p.o.Engine.Name()
	}
	if p.o.EngineErr != nil {
		st.EngineError = p.o.EngineErr.Error()
	}
	return st
}

// List returns the last limit replies, oldest first.
func (p *Player) List(limit int) ([]buffer.Reply, error) { return p.o.Store.ListReplies(limit, false) }

// Run speaks replies until ctx ends. Replies left "speaking" by a crash are
// acknowledged interrupted first (never spoken again by themselves).
func (p *Player) Run(ctx context.Context) error {
	open, err := p.o.Store.OpenReplies(0)
	if err != nil {
		return fmt.Errorf("replies: %w", err)
	}
	for _, r := range open {
		if r.State == buffer.ReplySpeaking {
			p.finishIf(r, protocol.OutcomeInterrupted, "the device stopped while speaking it")
		}
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := p.step(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if next == 0 {
			continue // spoke one: look again at once
		}
		timer.Reset(next)
		select {
		case <-ctx.Done():
			return nil
		case <-p.wake:
		case <-timer.C:
		}
	}
}

// step handles the queue once: expires, holds, or speaks the first reply
// whose turn it is. It returns 0 after speaking (call again), else how long
// until something may change by itself (the next expiry).
func (p *Player) step(ctx context.Context) time.Duration {
	open, err := p.o.Store.OpenReplies(0)
	if err != nil {
		p.log.Error("read stored replies", "err", err)
		return 5 * time.Second
	}
	now := time.Now()
	mode := p.o.Mode()
	p.mu.Lock()
	ptt := p.ptt
	requested := make(map[string]bool, len(p.requested))
	for k, v := range p.requested {
		requested[k] = v
	}
	p.mu.Unlock()
	wait := time.Hour
	var turn *buffer.Reply
	var gap *partInfo // the turn's parts before it never came
	blocked := false  // the turn waits for a part before it (parts.go)
	waiting := 0
	open = orderParts(open)
	byID := make(map[string]buffer.Reply, len(open))
	for _, r := range open {
		byID[r.ID] = r
	}
	for i := range open {
		r := open[i]
		pi := p.partInfo(r, byID)
		if pi.late {
			p.finishIf(r, protocol.OutcomeExpired, "arrived after the part following it was spoken")
			continue
		}
		deadline := p.deadline(r, pi)
		if !deadline.IsZero() && !now.Before(deadline) {
			p.finishIf(r, protocol.OutcomeExpired, "")
			continue
		}
		if !deadline.IsZero() {
			wait = min(wait, deadline.Sub(now)+time.Millisecond)
		}
		waiting++
		speakable := mode == string(buffer.ModeFeedback) || r.Urgent || requested[r.ID]
		if !speakable {
			if r.State == buffer.ReplyQueued {
				p.finishIf(r, protocol.OutcomeHeld, "")
				if p.o.Earcon != nil && (!pi.isPart || pi.part.Index == 1) {
					p.o.Earcon("reply_waiting")
				}
			}
			continue
		}
		if turn != nil || blocked {
			continue
		}
		switch {
		case pi.predOpen():
			// The part before is held or not yet spoken: it goes first.
			blocked = true
		case len(pi.missing) > 0:
			if due := pi.since(r).Add(p.o.PartWait); now.Before(due) {
				blocked = true // one answer at a time: later replies wait too (part_wait bounds it)
				wait = min(wait, due.Sub(now)+time.Millisecond)
			} else {
				turn, gap = &open[i], &pi
			}
		default:
			turn = &open[i]
		}
	}
	// Replays of finished replies asked for by id come after the open ones.
	if turn == nil && !blocked {
		for id := range requested {
			if r, err := p.o.Store.GetReply(id); err == nil && !r.State.Open() && now.Before(r.ExpiresAt) {
				turn = &r
				break
			} else if err == nil {
				p.mu.Lock()
				delete(p.requested, id)
				p.mu.Unlock()
			}
		}
	}
	if turn != nil && !ptt && turn.State.Open() {
		waiting-- // about to be spoken: no longer waiting
	}
	p.setWaiting(waiting)
	if turn == nil || ptt {
		return wait
	}
	if gap != nil {
		p.declareMissing(ctx, *turn, *gap)
		return 0 // look again: the turn may go on now
	}
	if !p.speak(ctx, *turn) {
		return time.Second // the store failed: try again later, not in a loop
	}
	p.mu.Lock()
	delete(p.requested, turn.ID)
	p.mu.Unlock()
	return 0
}

func (p *Player) setWaiting(n int) {
	p.mu.Lock()
	p.waiting = n
	speaking := p.speaking != ""
	p.mu.Unlock()
	if p.o.Metrics != nil {
		p.o.Metrics.SetState(speaking, n)
	}
}

// finish stores an outcome with its ack.
func (p *Player) finish(r buffer.Reply, outcome, reason string) {
	p.fin.Lock()
	defer p.fin.Unlock()
	p.finishLocked(r, outcome, reason)
}

// finishIf is finish for r as read earlier: only if its stored state is
// still r.State (Receive may have dropped it meanwhile; a reply is never
// finished twice, nor reopened by a late hold).
func (p *Player) finishIf(r buffer.Reply, outcome, reason string) bool {
	p.fin.Lock()
	defer p.fin.Unlock()
	if cur, err := p.o.Store.GetReply(r.ID); err != nil || cur.State != r.State {
		return false
	}
	p.finishLocked(r, outcome, reason)
	return true
}

// finishLocked is finish with p.fin held.
func (p *Player) finishLocked(r buffer.Reply, outcome, reason string) {
	ack := protocol.AckBody{CommandID: r.ID, CommandType: protocol.CmdReply,
		OK:    outcome != protocol.OutcomeFailed && outcome != protocol.OutcomeDropped && outcome != protocol.OutcomeMissing,
		Error: reason, Outcome: outcome}
	if outcome == protocol.OutcomeInterrupted {
		ack.Error = ""
	}
	body, err := json.Marshal(ack)
	if err == nil {
		_, err = p.o.Store.UpdateReply(r.ID, buffer.ReplyState(outcome), reason, body, !p.o.Online())
	}
	if err != nil {
		p.log.Error("store reply outcome", "id", r.ID, "outcome", outcome, "err", err)
		return
	}
	p.mu.Lock()
	delete(p.arrived, r.ID) // held replies are timed from their turn
	p.mu.Unlock()
	if p.o.Metrics != nil {
		p.o.Metrics.Outcome(outcome)
	}
	p.log.Info("reply "+outcome, "id", r.ID, "reason", reason)
}

// speak plays one reply and stores its outcome; false when the store
// refused to mark it speaking (nothing was played).
func (p *Player) speak(ctx context.Context, r buffer.Reply) bool {
	if p.o.Engine == nil {
		reason := "speech synthesis unavailable"
		if p.o.EngineErr != nil {
			reason += ": " + p.o.EngineErr.Error()
		}
		p.finishIf(r, protocol.OutcomeFailed, reason)
		return true
	}
	text, _ := tts.Prepare(spokenText(r), 0) // spoken whole, in pieces of max_chars (pieces.go)
	if text == "" {
		p.finishIf(r, protocol.OutcomeFailed, "nothing to say after removing control characters")
		return true
	}
	spk, err := p.o.Speaker()
	if err != nil {
		p.finishIf(r, protocol.OutcomeFailed, "speaker: "+err.Error())
		return true
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p.mu.Lock()
	p.speaking, p.cancel, p.interrupt = r.ID, cancel, ""
	turnAt := p.arrived[r.ID]
	delete(p.arrived, r.ID)
	p.mu.Unlock()
	if turnAt.IsZero() || r.State == buffer.ReplyHeld || !r.State.Open() {
		turnAt = time.Now() // held or replayed: time from its turn
	}
	// Synthesis starts while the state is written (both take milliseconds);
	// no sample is played before "speaking" is stored: a crash from there on
	// ends the reply as interrupted, never spoken twice.
	stream, _, err := synthesize(pctx, p.o.Engine, text, r.Lang, p.o.MaxChars)
	p.fin.Lock()
	serr := errFinished
	if cur, gerr := p.o.Store.GetReply(r.ID); gerr != nil {
		serr = gerr
	} else if cur.State == r.State { // not dropped since it was read
		_, serr = p.o.Store.UpdateReply(r.ID, buffer.ReplySpeaking, "", nil, false)
	}
	p.fin.Unlock()
	if errors.Is(serr, errFinished) {
		if stream != nil {
			stream.Close()
		}
		p.mu.Lock()
		p.speaking, p.cancel = "", nil
		p.mu.Unlock()
		return true // finished meanwhile (dropped): nothing to speak
	}
	if serr != nil {
		if stream != nil {
			stream.Close()
		}
		p.mu.Lock()
		p.speaking, p.cancel = "", nil
		p.mu.Unlock()
		p.log.Error("store reply state; not speaking it now", "id", r.ID, "err", serr)
		return false
	}
	if p.o.Metrics != nil {
		p.o.Metrics.SetState(true, p.Status().Waiting)
	}
	outcome, reason := protocol.OutcomeSpoken, ""
	if err == nil {
		var done <-chan error
		done, err = spk.PlayStream(pctx, stream, func(at time.Time) {
			if p.o.Metrics != nil {
				p.o.Metrics.FirstAudio(at.Sub(turnAt))
			}
			if p.o.Turns != nil && r.InReplyTo != "" {
				p.o.Turns.FirstAudio(r.InReplyTo, at)
			}
			p.log.Debug("reply audio started", "id", r.ID, "after", at.Sub(turnAt))
		})
		if err == nil {
			err = <-done
		}
		stream.Close()
	}
	p.mu.Lock()
	why := p.interrupt
	p.speaking, p.cancel = "", nil
	p.mutedUntil = time.Now().Add(p.o.Tail)
	p.mu.Unlock()
	switch {
	case err == nil:
	case pctx.Err() != nil:
		outcome = protocol.OutcomeInterrupted
		if why == "" {
			why = "the device is stopping"
		}
		reason = why
	default:
		outcome, reason = protocol.OutcomeFailed, err.Error()
	}
	p.finish(r, outcome, reason)
	return true
}

func spokenText(r buffer.Reply) string {
	if r.Spoken != "" {
		return r.Spoken
	}
	return r.Text
}
