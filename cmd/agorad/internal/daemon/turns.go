package daemon

import (
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/cmd/agorad/internal/turns"
)

// newTurnClock times each spoken turn (agorad_turn_stage_seconds and a debug
// line per stage) and plays the "thinking" earcon when the backend is slow.
// It reads the router lazily: the router is built after the uplink that
// reports to the clock.
func newTurnClock(d *core) *turns.Clock {
	return turns.New(turns.Options{
		Observer: d.met.NewTurns(turns.Stages), Logger: d.log,
		ThinkingAfter: d.cfg.Replies.ThinkingAfter.D(),
		Thinking:      func() { d.sounds.Play("thinking") },
		Listening:     func() bool { return d.router != nil && d.router.Mode() == buffer.ModeListen },
	})
}

// publishedTurn reports a question's PUBACK to the turn clock (the uplink's
// OnPublished); notes travel in batches and are no turn of their own.
func (d *core) publishedTurn(e buffer.Entry) {
	if e.Kind == buffer.KindUtterance {
		d.turns.Published(e.ID, time.Now())
	}
}
