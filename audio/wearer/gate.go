package wearer

import (
	"time"

	"github.com/agora/agorad/audio"
)

// Frame gate: the stream the segmenter sees keeps only the frames near the
// wearer's speech. A frame is loud when it reaches the wearer's level less
// FrameBelowDB (and the floor plus MinSNRDB); the gate opens Lookahead
// before a loud frame and stays open Hold after one, so the wearer's soft
// onsets, endings and pauses inside a phrase pass, and fades over fadeLen
// instead of clicking. Everything else becomes silence: babble alone never
// opens the segmenter (nor costs the VAD), and the wearer's utterances end
// at the wearer's pauses instead of running on into the crew's talk.
//
// The output is the input delayed by Lookahead: same offsets and clock,
// delivered Lookahead later.

const fadeLen = FrameSamples / 4 // 5 ms

type frame struct {
	s    []float32
	off  int64
	t    time.Time
	loud bool
}

type gate struct {
	lookahead, hold int // frames
	queue           []frame
	seen            int64 // frames seen
	lastLoud        int64 // index of the last loud frame seen, -1<<62 when none
	gain            float32
	next            int64 // offset the next input sample must have, -1 before the first
	pend            []float32
	pendOff         int64
	pendT           time.Time
	thresh          float64
	threshAt        int64 // frame index the threshold was computed at
}

func (t *Tracker) initGate() {
	fr := func(d time.Duration) int { return int((d + time.Second/50 - 1) / (time.Second / 50)) }
	t.g = gate{lookahead: fr(t.cfg.Lookahead), hold: fr(t.cfg.Hold), lastLoud: -1 << 62, next: -1, threshAt: -1 << 62}
	if !t.cfg.Enabled {
		t.g.gain = 1 // no fade in: off passes the audio unchanged
	}
}

// Delay is how late Push delivers the stream.
func (t *Tracker) Delay() time.Duration {
	return time.Duration(t.g.lookahead) * time.Second / 50
}

// threshold is the level a frame must reach to be the wearer's; the floor
// is taken again once a second (a sort of two minutes of frames).
func (t *Tracker) threshold() float64 {
	g := &t.g
	if g.seen-g.threshAt >= 50 {
		g.threshAt = g.seen
		t.floor = t.Floor()
	}
	return max(t.Wearer()-t.cfg.FrameBelowDB, t.floor+t.cfg.MinSNRDB)
}

// Push feeds the next chunk of the stream (every chunk, in order) and
// returns the gated stream up to Delay behind it. With the gate off the
// audio passes unchanged (still delayed, so the timing does not depend on
// the setting). A chunk that skips ahead flushes what is held first.
func (t *Tracker) Push(c audio.Chunk) []audio.Chunk {
	if len(c.Samples) == 0 {
		return nil
	}
	g := &t.g
	var out []audio.Chunk
	if g.next >= 0 && c.Offset != g.next {
		out = append(out, t.Flush()...)
	}
	if g.next < 0 || len(g.pend) == 0 {
		g.pendOff, g.pendT = c.Offset-int64(len(g.pend)), c.Time
	}
	g.next = c.Offset + int64(len(c.Samples))
	g.pend = append(g.pend, c.Samples...)
	var done []frame
	n := 0
	for ; len(g.pend)-n >= FrameSamples; n += FrameSamples {
		f := frame{s: append([]float32(nil), g.pend[n:n+FrameSamples]...), off: g.pendOff, t: g.pendT}
		g.pendOff += FrameSamples
		g.pendT = g.pendT.Add(time.Second / 50)
		level := dbfs(f.s)
		t.observe(f.s, level)
		f.loud = level >= t.threshold()
		if f.loud {
			g.lastLoud = g.seen
		}
		g.seen++
		g.queue = append(g.queue, f)
		for len(g.queue) > g.lookahead {
			done = append(done, t.release())
		}
	}
	g.pend = append(g.pend[:0], g.pend[n:]...)
	return append(out, join(done)...)
}

// release gates and returns the oldest queued frame: open when a loud frame
// lies within Lookahead after it (all of those are seen) or Hold before it.
func (t *Tracker) release() frame {
	g := &t.g
	f := g.queue[0]
	g.queue = g.queue[1:]
	idx := g.seen - int64(len(g.queue)) - 1
	want := float32(0)
	if !t.cfg.Enabled || g.lastLoud >= idx-int64(g.hold) {
		want = 1
	}
	from := g.gain
	for i := range f.s {
		k := float32(1)
		if i < fadeLen {
			k = float32(i+1) / fadeLen
		}
		f.s[i] *= from + (want-from)*k
	}
	g.gain = want
	return f
}

// Flush returns everything held (end of stream, or a gap): the frames the
// lookahead holds and the last partial frame, gated as if nothing loud
// follows.
func (t *Tracker) Flush() []audio.Chunk {
	g := &t.g
	var done []frame
	for len(g.queue) > 0 {
		done = append(done, t.release())
	}
	if len(g.pend) > 0 {
		f := frame{s: append([]float32(nil), g.pend...), off: g.pendOff, t: g.pendT}
		g.queue = append(g.queue, f)
		g.seen++
		done = append(done, t.release())
		g.pend = g.pend[:0]
	}
	g.next = -1
	return join(done)
}

// join makes contiguous frames one chunk.
func join(fs []frame) []audio.Chunk {
	if len(fs) == 0 {
		return nil
	}
	c := audio.Chunk{Offset: fs[0].off, Time: fs[0].t}
	for _, f := range fs {
		c.Samples = append(c.Samples, f.s...)
	}
	return []audio.Chunk{c}
}
