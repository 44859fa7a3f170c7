package chain

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Kind is what a spoken line should do.
type Kind int

const (
	// Note is stored in the listen buffer.
	Note Kind = iota
	// Question wakes the device ("Hey Agora, ..."): the buffer goes to the
	// backend as a batch, the rest of the sentence as a question, and the
	// answer is spoken.
	Question
	// Listen switches back to listen mode ("Agora, listen").
	Listen
)

// Line is one sentence of a scripted round.
type Line struct {
	Text string
	Kind Kind
}

// Inspection is the scripted round of make demo and the conversation
// test: three notes in listen mode, a question, the switch back. In
// espeak-ng's en-us at 140 words a minute tiny.en writes the three notes
// word for word, and the spotter hears the name in both wake sentences
// (measured with agorad transcribe; "The beam at grid C is deflected."
// came out as "The B-mat-B-Rid-C is deflected.").
var Inspection = []Line{
	{"There is moisture in the basement.", Note},
	{"The smoke detector in the hallway is missing.", Note},
	{"There are cracks in the concrete floor.", Note},
	{"Hey Agora, what should I write in the report?", Question},
	{"Agora, listen.", Listen},
}

// Inspectie is the same round in Dutch, for the multilingual model with
// language auto (make demo DEMO_ARGS="-script nl ..."), spoken by
// espeak-ng's nl voice (VoiceNL).
var Inspectie = []Line{
	{"Er zit vocht in de kelder.", Note},
	{"De rookmelder in de gang ontbreekt.", Note},
	{"Er zitten scheuren in de betonvloer.", Note},
	{"Hee Agora, wat moet ik in het rapport schrijven?", Question},
	{"Agora, luister.", Listen},
}

// Waits bound each step: whisper on a loaded two-core machine is slow, so
// they are generous; a step returns as soon as its effect is seen.
var (
	HeardWithin    = 90 * time.Second
	AnsweredWithin = 2 * time.Minute
)

// Step is what one line did, by the wall clock.
type Step struct {
	Line
	Spoken
	// Done is when the line's effect was seen: the note stored, the
	// answer acknowledged spoken, listen mode back.
	Done time.Time
	// Heard is what whisper wrote for the line (agorad's last
	// transcription once the effect was seen).
	Heard string
	// For a question: the reply and its outcome.
	Reply   Reply
	Outcome Outcome
}

// Pause is how long the inspector waits after the device has finished
// speaking before saying the next line: the device is deaf while it
// speaks and for replies.tail (300 ms) after (half duplex), so a line said
// at once loses its first syllables ("Agora, listen." became "[Music]").
var Pause = 1500 * time.Millisecond

// SayLine speaks one line, once the device is not speaking, and waits for
// its effect.
func (c *Chain) SayLine(ctx context.Context, l Line) (Step, error) {
	if _, err := c.Until(ctx, AnsweredWithin, func(s Status) bool { return s.Speaking == "" && s.RepliesWaiting == 0 }, nil); err != nil {
		return Step{}, fmt.Errorf("before %q: the device is still speaking: %w", l.Text, err)
	}
	select {
	case <-time.After(Pause):
	case <-ctx.Done():
		return Step{}, ctx.Err()
	}
	before, err := c.Status(ctx)
	if err != nil {
		return Step{}, err
	}
	nReplies := len(c.Bus.Replies())
	sp, err := c.Say(ctx, l.Text)
	if err != nil {
		return Step{}, err
	}
	st := Step{Line: l, Spoken: sp}
	switch l.Kind {
	case Note:
		_, err = c.Until(ctx, HeardWithin, func(s Status) bool { return s.Buffered > before.Buffered }, nil)
	case Listen:
		_, err = c.Until(ctx, HeardWithin, func(s Status) bool { return s.Mode == "listen" && s.Transcriptions > before.Transcriptions }, nil)
	case Question:
		ok := c.Bus.Wait(AnsweredWithin, func(b *Bus) bool {
			rs := b.Replies()
			if len(rs) <= nReplies {
				return false
			}
			st.Reply = rs[nReplies]
			for _, o := range b.Outcomes() {
				if o.CommandID == st.Reply.ID && o.Outcome != "held" {
					st.Outcome = o
					return true
				}
			}
			return false
		})
		if !ok {
			err = fmt.Errorf("no answer acknowledged within %v", AnsweredWithin)
		}
	}
	if err != nil {
		return st, fmt.Errorf("%q: %w", l.Text, err)
	}
	st.Done = time.Now()
	if fs, err := c.StatusFull(ctx); err == nil {
		st.Heard = fs.LastText()
	}
	return st, nil
}

// Settle waits until the device has nothing in its outbox and nothing
// unconfirmed: the bridge confirmed every entry.
func (c *Chain) Settle(ctx context.Context, timeout time.Duration) (Status, error) {
	return c.Until(ctx, timeout, func(s Status) bool { return s.Outbox == 0 && s.Unconfirmed == 0 }, nil)
}

// Narrator prints what happens on the chain as it happens: what whisper
// heard, mode changes, what the device sent, the replies and their
// outcomes, each with its time since the last end of speech.
type Narrator struct {
	c     *Chain
	print func(string)
	sync  chan chan struct{}
	mu    sync.Mutex
	last  time.Time // the last end of speech
}

// Narrate starts a narrator until ctx ends.
func (c *Chain) Narrate(ctx context.Context, print func(string)) *Narrator {
	n := &Narrator{c: c, print: print, sync: make(chan chan struct{})}
	go n.run(ctx)
	return n
}

// Sync returns once the narrator has printed what had happened when it
// was called, so a caller's own line comes after it.
func (n *Narrator) Sync(ctx context.Context) {
	done := make(chan struct{})
	select {
	case n.sync <- done:
		select {
		case <-done:
		case <-ctx.Done():
		}
	case <-ctx.Done():
	}
}

// SpeechEnded sets the reference for the times printed next.
func (n *Narrator) SpeechEnded(t time.Time) {
	n.mu.Lock()
	n.last = t
	n.mu.Unlock()
}

func (n *Narrator) say(at time.Time, format string, args ...any) {
	n.mu.Lock()
	last := n.last
	n.mu.Unlock()
	rel := ""
	if !last.IsZero() {
		rel = fmt.Sprintf("+%4.1fs ", at.Sub(last).Seconds())
	}
	n.print(rel + fmt.Sprintf(format, args...))
}

func (n *Narrator) run(ctx context.Context) {
	var prev Status
	seenMsgs := 0
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	first := true
	for {
		var synced chan struct{}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case synced = <-n.sync:
		}
		if st, err := n.c.StatusFull(ctx); err == nil {
			now := time.Now()
			if !first && st.Transcriptions > prev.Transcriptions {
				n.say(now, "whisper heard   %q", st.LastText())
			}
			if !first && st.Buffered > prev.Buffered {
				n.say(now, "note stored     listen buffer %d", st.Buffered)
			}
			if !first && st.Mode != prev.Mode {
				n.say(now, "mode            %s -> %s", prev.Mode, st.Mode)
			}
			prev, first = st.Status, false
		}
		msgs := n.c.Bus.Messages()
		for _, m := range msgs[seenMsgs:] {
			if line := describe(m); line != "" {
				n.say(m.At, "%s", line)
			}
		}
		seenMsgs = len(msgs)
		if synced != nil {
			close(synced)
		}
	}
}

// describe is one line for a recorded message, or "" for the ones a
// person does not need to see (status, the bridge's acks).
func describe(m Message) string {
	b := &Bus{msgs: []Message{m}}
	switch m.Topic {
	case "batches":
		if s := b.Sent(); len(s) == 1 {
			return fmt.Sprintf("sent batch      %d notes: %s", len(s[0].Texts), strings.Join(s[0].Texts, " | "))
		}
	case "utterances":
		if s := b.Sent(); len(s) == 1 {
			return fmt.Sprintf("sent question   %q", s[0].Texts[0])
		}
	case "commands":
		if r := b.Replies(); len(r) == 1 {
			return fmt.Sprintf("reply received  %q", oneLine(r[0].Text))
		}
	case "acks":
		if o := b.Outcomes(); len(o) == 1 {
			return fmt.Sprintf("reply %s", o[0].Outcome)
		}
	}
	return ""
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
