package daemon

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/wake"
)

// Router applies wake phrases and the current mode to what was heard. It is
// the only writer of the mode, and it serialises everything it handles so
// that a wake phrase's flush and the command after it keep their order.
type Router struct {
	store   Store
	rules   Matcher
	sounds  Sounder
	online  func() bool
	deflt   buffer.Mode
	mu      sync.Mutex
	mode    buffer.Mode
	onMode  func(buffer.Mode)
	lastMsg Heard
	lastAt  time.Time

	keep func(buffer.Record, buffer.Mode, error) (string, string, bool) // RouterOptions.Keep
	// owedMode, owedFlush: a mode change made in memory while the store
	// had failed (RouterOptions.StoreFailed), persisted by Settle.
	storeFailed         func(error) bool
	owedMode, owedFlush bool
}

// RouterOptions configures a Router.
type RouterOptions struct {
	Store       Store
	Rules       Matcher
	Sounds      Sounder           // nil: silent
	Online      func() bool       // nil: always offline
	DefaultMode buffer.Mode       // used when no mode was persisted yet
	OnMode      func(buffer.Mode) // called (under the router's lock) after every mode change
	// Keep, if set, is offered what the store refused, with the mode and
	// the store's error: it returns the record's id, how it kept it
	// otherwise (KeptUnstored, KeptInMemory: health.go) and true, or false
	// to refuse it.
	Keep func(rec buffer.Record, mode buffer.Mode, storeErr error) (id, how string, ok bool)
	// StoreFailed, if set, says an error of the store is a storage failure:
	// a mode change (a wake) is then made in memory, its listen-buffer
	// flush and persisting owed until Settle.
	StoreFailed func(error) bool
}

// NewRouter loads the persisted mode (or the default) and finishes a wake
// that a crash interrupted: in feedback mode the listen buffer must be empty,
// so anything still in it is flushed as the batch it was meant to become.
func NewRouter(o RouterOptions) (*Router, error) {
	if !o.DefaultMode.Valid() {
		return nil, fmt.Errorf("router: default mode %q is not listen or feedback", o.DefaultMode)
	}
	r := &Router{store: o.Store, rules: o.Rules, sounds: o.Sounds, online: o.Online, deflt: o.DefaultMode, onMode: o.OnMode,
		keep: o.Keep, storeFailed: o.StoreFailed}
	if r.online == nil {
		r.online = func() bool { return false }
	}
	mode, err := o.Store.Mode()
	if err != nil {
		return nil, fmt.Errorf("router: read persisted mode: %w", err)
	}
	if !mode.Valid() {
		mode = o.DefaultMode
		if err := o.Store.SetMode(mode); err != nil {
			return nil, fmt.Errorf("router: persist default mode: %w", err)
		}
	}
	r.mode = mode
	if mode == buffer.ModeFeedback {
		if _, _, err := o.Store.FlushListen(!r.online()); err != nil {
			return nil, fmt.Errorf("router: finish interrupted listen-buffer flush: %w", err)
		}
	}
	return r, nil
}

// Mode is the current mode.
func (r *Router) Mode() buffer.Mode {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mode
}

// Last is the last text handled and when.
func (r *Router) Last() (Heard, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastMsg, r.lastAt
}

// SetMode switches mode as the wake phrases do (used by agoractl and by the
// backend's set_mode command): to feedback flushes the listen buffer.
func (r *Router) SetMode(ctx context.Context, mode buffer.Mode) (Outcome, error) {
	if !mode.Valid() {
		return Outcome{}, fmt.Errorf("mode %q is not listen or feedback", mode)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := Outcome{ModeBefore: r.mode}
	var err error
	// A set mode that is already the mode changes nothing the inspector
	// should hear: no earcon (a spoken wake phrase is still acknowledged).
	if mode == buffer.ModeFeedback {
		err = r.toFeedback(&out, mode != r.mode)
	} else {
		err = r.toListen(mode != r.mode)
	}
	out.ModeAfter = r.mode
	return out, err
}

// Flush sends the listen buffer as a batch now, without changing mode.
func (r *Router) Flush(ctx context.Context) (Outcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := Outcome{ModeBefore: r.mode, ModeAfter: r.mode}
	if err := r.flush(&out); err != nil {
		return out, fmt.Errorf("flush listen buffer: %w", err)
	}
	return out, nil
}

// Handle routes one piece of text. An error means the text was not stored;
// the caller keeps its audio journal entry so nothing is lost.
func (r *Router) Handle(ctx context.Context, h Heard) (out Outcome, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out.ModeBefore = r.mode
	defer func() { out.ModeAfter = r.mode }()
	text := strings.TrimSpace(h.Text)
	var m wake.Match
	if h.Spot != nil {
		m = r.rules.MatchSpot(text, h.Words, *h.Spot)
	} else {
		m = r.rules.Match(text)
	}
	// No text is nothing to keep, unless the rules wake on it all the same
	// (a name the spotter is sure of where whisper's guard dropped the
	// text: the words after it, heard again, are the question).
	if text == "" && m.Action == wake.None {
		return out, r.release(h.AudioID)
	}
	out.Wake = m.Action
	// The journaled audio goes with the last text stored from it, never
	// with the words before the wake phrase: if the flush, the mode change
	// or the question after them then fails, the audio stays journaled and
	// is transcribed again (the words before may then be stored twice: a
	// duplicate, never a loss).
	consumed := false // the store released the audio with the text
	switch m.Action {
	case wake.Feedback, wake.Listen:
		if _, err := r.deliver(h, m.Before, &out, true); err != nil {
			return out, err
		}
		if m.Action == wake.Feedback {
			err = r.toFeedback(&out, true)
		} else {
			err = r.toListen(true)
		}
		if err != nil {
			return out, err
		}
		if consumed, err = r.deliver(h, m.Remainder, &out, false); err != nil {
			return out, err
		}
	default:
		if consumed, err = r.deliver(h, text, &out, false); err != nil {
			return out, err
		}
	}
	r.lastMsg, r.lastAt = h, time.Now()
	if out.Stored > 0 && out.Sent == 0 && out.Wake == wake.None {
		r.play("stored")
	}
	switch {
	case consumed:
		return out, nil
	case out.Kept > 0:
		// Kept without the store: its journaled audio stays (the failed
		// store cannot release it); a restart transcribes it again, a
		// duplicate, never a loss.
		return out, nil
	case out.Stored+out.Sent > 0 && h.AudioID != "":
		// Only the words before the wake phrase were stored (linked to the
		// audio): release it now as storing them would have.
		if err := r.store.ReleaseAudio(h.AudioID); err != nil {
			return out, fmt.Errorf("release journaled audio %s: %w", h.AudioID, err)
		}
		return out, nil
	default:
		return out, r.release(h.AudioID)
	}
}

// deliver stores text in the listen buffer or queues it for the backend,
// depending on the current mode.
// With keepJournal the audio stays journaled (more text from it follows).
// It reports whether text was stored with the audio released.
func (r *Router) deliver(h Heard, text string, out *Outcome, keepJournal bool) (bool, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return false, nil
	}
	rec := buffer.Record{
		Text: text, Lang: h.Lang, Confidence: h.Confidence,
		StartedAt: h.StartedAt, DurationMS: h.Duration.Milliseconds(),
		Source: h.Source, Offline: !r.online(),
		// The store removes (or, with audio retention "keep", retains) the
		// journaled audio in the same transaction that stores the text, so
		// a crash can neither lose the utterance nor transcribe it twice.
		AudioID: h.AudioID, KeepJournal: keepJournal,
	}
	released := h.AudioID != "" && !keepJournal
	if r.keep != nil && rec.ID == "" {
		// The id is chosen here so that a copy kept otherwise (sent
		// unstored, held in memory) and the entry of a failed commit that
		// reached the log after all (seen on a file system gone
		// read-only) are one message to the backend.
		id, err := uuid.NewV7()
		if err != nil {
			return false, fmt.Errorf("store utterance: new id: %w", err)
		}
		rec.ID = id.String()
	}
	// Listen mode stores the note; feedback mode queues it for the backend.
	// Either way a store that refuses it hands it to keep (held otherwise).
	count, what, write := &out.Stored, "store note in listen buffer", func() (string, error) {
		stored, err := r.store.AppendListen(rec)
		return stored.ID, err
	}
	if r.mode != buffer.ModeListen {
		count, what, write = &out.Sent, "queue utterance for the backend", func() (string, error) {
			e, err := r.store.EnqueueUtterance(rec)
			return e.ID, err
		}
	}
	id, err := write()
	if err != nil && r.keep != nil {
		if kept, how, ok := r.keep(rec, r.mode, err); ok {
			*count++
			out.Kept++
			out.ID, out.KeptAs = kept, how
			return false, nil // its journaled audio (if any) stays: the store cannot release it
		}
	}
	if err != nil {
		r.play("error")
		return false, fmt.Errorf("%s: %w", what, err)
	}
	*count++
	out.ID = id
	return released, nil
}

// toFeedback flushes the listen buffer and switches to feedback mode; the
// earcon plays if announce.
func (r *Router) toFeedback(out *Outcome, announce bool) error {
	// Flush before persisting the mode: a crash in between leaves listen
	// mode with an empty buffer and the batch queued; unless words before
	// the wake word already released it, the utterance's journaled audio
	// brings the wake phrase back on the next start.
	if err := r.flush(out); err != nil {
		if !r.failed(err) {
			r.play("error")
			return fmt.Errorf("flush listen buffer on wake: %w", err)
		}
		r.owedFlush = true // the notes stay stored; Settle sends them
	}
	if r.mode != buffer.ModeFeedback {
		if err := r.store.SetMode(buffer.ModeFeedback); err != nil {
			if !r.failed(err) {
				return fmt.Errorf("persist feedback mode: %w", err)
			}
			r.owedMode = true
		}
		r.mode = buffer.ModeFeedback
		r.changed()
	}
	if announce {
		r.play("feedback_on")
	}
	return nil
}

// toListen switches to listen mode; the earcon plays if announce.
func (r *Router) toListen(announce bool) error {
	if r.mode != buffer.ModeListen {
		if err := r.store.SetMode(buffer.ModeListen); err != nil {
			if !r.failed(err) {
				return fmt.Errorf("persist listen mode: %w", err)
			}
			r.owedMode = true
		}
		r.mode = buffer.ModeListen
		r.changed()
	}
	if announce {
		r.play("listen_on")
	}
	return nil
}

// flush moves the listen buffer into the outbox. One batch holds the whole
// buffer up to the store's largest value (about 50,000 notes); a larger
// buffer goes as several batches, oldest first, still ahead of what follows.
func (r *Router) flush(out *Outcome) error {
	for {
		e, n, err := r.store.FlushListen(!r.online())
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if out.BatchID == "" {
			out.BatchID, out.BatchSeq = e.ID, e.Seq
		}
		out.BatchCount += n
	}
}

// failed: err is a storage failure and a mode change may be owed.
func (r *Router) failed(err error) bool {
	return r.storeFailed != nil && r.storeFailed(err)
}

// Settle persists what a failed store owed: the mode changed in memory,
// and in feedback mode the listen buffer's flush of that wake (its batch
// then follows what was sent unstored meanwhile). Called once the store
// writes again; idempotent.
func (r *Router) Settle() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.owedFlush && r.mode == buffer.ModeFeedback {
		var out Outcome
		if err := r.flush(&out); err != nil {
			return fmt.Errorf("flush the listen buffer owed since a wake: %w", err)
		}
	}
	r.owedFlush = false
	if r.owedMode {
		if err := r.store.SetMode(r.mode); err != nil {
			return fmt.Errorf("persist %s mode owed since the store failed: %w", r.mode, err)
		}
		r.owedMode = false
	}
	return nil
}

func (r *Router) changed() {
	if r.onMode != nil {
		r.onMode(r.mode)
	}
}

func (r *Router) release(audioID string) error {
	if audioID == "" {
		return nil
	}
	if err := r.store.DropAudio(audioID); err != nil {
		return fmt.Errorf("release journaled audio %s: %w", audioID, err)
	}
	return nil
}

func (r *Router) play(name string) {
	if r.sounds != nil {
		r.sounds.Play(name)
	}
}
