package turns

import (
	"log/slog"
	"sync"
	"time"
)

// The stages of a turn, in order; each is timed from the end of speech.
const (
	TurnEnd     = "turn_end"
	Transcribed = "transcribed"
	Published   = "published"
	Reply       = "reply"
	FirstAudio  = "first_audio"
)

// Stages lists the stage names in order.
var Stages = []string{TurnEnd, Transcribed, Published, Reply, FirstAudio}

// MaxOpen bounds the turns kept while their answer is awaited.
const MaxOpen = 256

// Observer records a stage's time since the end of speech
// (*metrics.Metrics).
type Observer interface {
	TurnStage(stage string, d time.Duration)
}

// Options configure a Clock.
type Options struct {
	Observer Observer // nil: log only
	Logger   *slog.Logger
	// ThinkingAfter: when the question was published and no answer came
	// this long after, Thinking is called once. 0: no cue.
	ThinkingAfter time.Duration
	Thinking      func()
	// Listening reports listen mode, where the cue is never played.
	Listening func() bool
}

// Clock follows the turns awaiting an answer. Its methods are safe for
// concurrent use, and do nothing on a nil Clock.
type Clock struct {
	o   Options
	log *slog.Logger

	mu     sync.Mutex
	turns  map[string]*turn
	order  []string // ids by arrival, for dropping the oldest
	closed bool
}

type turn struct {
	speechEnd time.Time // zero until the speech path reported it
	at        map[string]time.Time
	observed  map[string]bool
	thinking  *time.Timer
	cued      bool
}

// New returns a Clock.
func New(o Options) *Clock {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Clock{o: o, log: o.Logger.With("component", "turns"), turns: map[string]*turn{}}
}

// Heard reports an utterance whose text is ready: speechEnd is its last
// speech sample, turnEnd when the segmenter ended the turn, transcribed when
// whisper returned. id is the outbox id of the question sent to the backend,
// "" when nothing was sent (a listen-mode note): then only the first two
// stages are observed.
func (c *Clock) Heard(id string, speechEnd, turnEnd, transcribed time.Time) {
	if c == nil {
		return
	}
	if speechEnd.IsZero() {
		return
	}
	if id == "" {
		c.observe("", TurnEnd, speechEnd, turnEnd)
		c.observe("", Transcribed, speechEnd, transcribed)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.get(id)
	if t == nil {
		return
	}
	t.speechEnd = speechEnd
	t.at[TurnEnd], t.at[Transcribed] = turnEnd, transcribed
	c.settle(id, t)
}

// Published reports the broker's PUBACK of the question id.
func (c *Clock) Published(id string, at time.Time) { c.stage(id, Published, at) }

// Replied reports the arrival of the answer to the question id.
func (c *Clock) Replied(id string, at time.Time) { c.stage(id, Reply, at) }

// FirstAudio reports the answer's first sample handed to the audio device;
// the turn is then forgotten.
func (c *Clock) FirstAudio(id string, at time.Time) { c.stage(id, FirstAudio, at) }

// Close stops the cue timers; later events are ignored.
func (c *Clock) Close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, t := range c.turns {
		if t.thinking != nil {
			t.thinking.Stop()
		}
	}
	c.turns, c.order = map[string]*turn{}, nil
}

func (c *Clock) stage(id, stage string, at time.Time) {
	if c == nil {
		return
	}
	if id == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.get(id)
	if t == nil {
		return
	}
	if _, ok := t.at[stage]; !ok {
		t.at[stage] = at
	}
	c.settle(id, t)
}

// get returns id's turn, made on first sight; nil once closed.
func (c *Clock) get(id string) *turn {
	if c.closed {
		return nil
	}
	if t, ok := c.turns[id]; ok {
		return t
	}
	for len(c.order) >= MaxOpen {
		c.forget(c.order[0])
	}
	t := &turn{at: map[string]time.Time{}, observed: map[string]bool{}}
	c.turns[id] = t
	c.order = append(c.order, id)
	return t
}

func (c *Clock) forget(id string) {
	if t, ok := c.turns[id]; ok && t.thinking != nil {
		t.thinking.Stop()
	}
	delete(c.turns, id)
	for i, o := range c.order {
		if o == id {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
}

// settle observes the stages now known, arms or disarms the cue, and
// forgets a finished turn. c.mu is held.
func (c *Clock) settle(id string, t *turn) {
	if t.speechEnd.IsZero() {
		return
	}
	for _, s := range Stages {
		if at, ok := t.at[s]; ok && !t.observed[s] {
			t.observed[s] = true
			c.observe(id, s, t.speechEnd, at)
		}
	}
	_, replied := t.at[Reply]
	_, spoken := t.at[FirstAudio]
	if (replied || spoken) && t.thinking != nil {
		t.thinking.Stop()
	}
	if pub, ok := t.at[Published]; ok && !replied && !spoken && t.thinking == nil &&
		c.o.ThinkingAfter > 0 && c.o.Thinking != nil {
		t.thinking = time.AfterFunc(time.Until(pub.Add(c.o.ThinkingAfter)), func() { c.think(id) })
	}
	if spoken {
		c.forget(id)
	}
}

// think plays the cue for id if its answer is still awaited.
func (c *Clock) think(id string) {
	c.mu.Lock()
	t, ok := c.turns[id]
	if !ok || c.closed {
		c.mu.Unlock()
		return
	}
	_, replied := t.at[Reply]
	play := !t.cued && !replied && (c.o.Listening == nil || !c.o.Listening())
	t.cued = t.cued || play
	waited := time.Since(t.speechEnd)
	c.mu.Unlock()
	if play {
		c.log.Debug("backend slow: thinking cue", "id", id, "since_speech_end", waited.Round(time.Millisecond))
		c.o.Thinking()
	}
}

// observe records one stage; the debug line carries the stage's wall-clock
// time too, so a benchmark can time it from its own end of speech.
func (c *Clock) observe(id, stage string, speechEnd, at time.Time) {
	d := at.Sub(speechEnd)
	if d < 0 {
		d = 0 // the capture clock can run ahead of the wall clock (a backlog read at once)
	}
	if c.o.Observer != nil {
		c.o.Observer.TurnStage(stage, d)
	}
	c.log.Debug("turn stage", "stage", stage, "id", id, "since_speech_end", d.Round(time.Millisecond),
		"at", at.UTC().Format(time.RFC3339Nano), "speech_end", speechEnd.UTC().Format(time.RFC3339Nano))
}
