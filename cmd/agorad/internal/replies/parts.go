package replies

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/protocol"
)

// A long answer comes as reply parts "<reply id>.p<i>of<n>"
// (protocol.ParseReplyPart). The player speaks a reply's parts in index
// order whatever order they arrive in, never a part before the one ahead of
// it has ended or been declared missing, counts a part's expiry from the end
// of the part before it (not from its arrival: a long answer's last part
// arrives with the first), and says aloud when a part never came.

// partID is the id of part j of p's reply that comes before p: for a
// streamed answer the one with more to follow (protocol.StreamPartID).
func partID(p protocol.ReplyPart, j int) string { return p.PartIDs(j)[0] }

// maxGapLookups bounds the store reads spent looking for the parts before
// one part: a forged "p9999of9999" costs at most this many.
const maxGapLookups = 32

// partInfo is what the store says about the parts before r.
type partInfo struct {
	part    protocol.ReplyPart
	isPart  bool
	missing []int        // indices before part.Index not stored (nearest first)
	prev    buffer.Reply // the nearest stored part before, if found
	hasPrev bool
	late    bool // the part after it has already ended: it comes too late to be spoken in order
}

// predOpen: the nearest stored part before is still to be spoken.
func (pi partInfo) predOpen() bool { return pi.hasPrev && pi.prev.State.Open() }

// since is when r began to wait for the parts before it: its arrival, or
// the end of the nearest stored part before it, whichever is later.
func (pi partInfo) since(r buffer.Reply) time.Time {
	if pi.hasPrev && !pi.prev.State.Open() && pi.prev.UpdatedAt.After(r.ReceivedAt) {
		return pi.prev.UpdatedAt
	}
	return r.ReceivedAt
}

// partInfo looks the parts before r up in open (the open replies by id)
// first, then in the store: a long answer's parts waiting together cost no
// store reads.
func (p *Player) partInfo(r buffer.Reply, open map[string]buffer.Reply) partInfo {
	part, ok := protocol.ParseReplyPart(r.ID)
	pi := partInfo{part: part, isPart: ok}
	if !ok {
		return pi
	}
	get := func(id string) (buffer.Reply, error) {
		if o, ok := open[id]; ok {
			return o, nil
		}
		return p.o.Store.GetReply(id)
	}
	if part.Index < part.Of || (part.Stream && !part.Last) {
		for _, id := range part.PartIDs(part.Index + 1) {
			if next, err := get(id); err == nil && !next.State.Open() &&
				next.State != buffer.ReplyExpired && next.State != buffer.ReplyDropped {
				pi.late = true
			}
		}
	}
	for j := part.Index - 1; j >= 1 && part.Index-j <= maxGapLookups; j-- {
		prev, err := get(partID(part, j))
		if err != nil {
			pi.missing = append(pi.missing, j)
			continue
		}
		pi.prev, pi.hasPrev = prev, true
		break
	}
	return pi
}

// deadline is when r expires; zero while a part before it is still to be
// spoken (that part's own deadline bounds the wait). A part after one that
// was heard (spoken, interrupted, declared missing, failed) has max_age from
// that part's end, or its own expires_at when later.
func (p *Player) deadline(r buffer.Reply, pi partInfo) time.Time {
	if !pi.isPart || pi.part.Index == 1 {
		return r.ExpiresAt
	}
	if pi.predOpen() {
		return time.Time{}
	}
	if pi.hasPrev && pi.prev.State != buffer.ReplyExpired && pi.prev.State != buffer.ReplyDropped {
		if d := pi.prev.UpdatedAt.Add(p.o.MaxAge); d.After(r.ExpiresAt) {
			return d
		}
	}
	return r.ExpiresAt
}

// orderParts puts each reply's parts together, in index order, where the
// first of them arrived; whole replies keep their arrival order.
func orderParts(open []buffer.Reply) []buffer.Reply {
	type key struct {
		reply string
		of    int
	}
	groups := map[key][]buffer.Reply{}
	keys := make([]key, len(open))
	found := false
	for i, r := range open {
		if part, ok := protocol.ParseReplyPart(r.ID); ok {
			keys[i] = key{part.Reply, part.Of}
			if part.Stream {
				keys[i].of = -1 // a streamed answer's parts: number unknown
			}
			groups[keys[i]] = append(groups[keys[i]], r)
			found = true
		}
	}
	if !found {
		return open
	}
	out := make([]buffer.Reply, 0, len(open))
	for i, r := range open {
		g, ok := groups[keys[i]]
		switch {
		case keys[i].of == 0:
			out = append(out, r)
		case ok:
			sort.SliceStable(g, func(a, b int) bool {
				pa, _ := protocol.ParseReplyPart(g[a].ID)
				pb, _ := protocol.ParseReplyPart(g[b].ID)
				return pa.Index < pb.Index
			})
			out = append(out, g...)
			delete(groups, keys[i])
		}
	}
	return out
}

// declareMissing says aloud that the parts before r never came, then stores
// the nearest one (pi.missing[0]) as finished "missing" with its ack (the
// reason names the whole gap), so r may go on. A part that arrives later is
// a redelivery of a stored id and is not spoken.
func (p *Player) declareMissing(ctx context.Context, r buffer.Reply, pi partInfo) {
	lo, hi := pi.missing[len(pi.missing)-1], pi.missing[0]
	notice, what := missingNotice(r.Lang, lo, hi, pi.part.Of)
	reason := fmt.Sprintf("%s never arrived (waited %v for it before part %d)", what, p.o.PartWait, pi.part.Index)
	p.log.Warn("reply part missing", "reply", pi.part.Reply, "missing", what, "next", r.ID)
	if p.o.Engine != nil {
		if err := p.sayNotice(ctx, partID(pi.part, hi), notice, r.Lang); err != nil {
			p.log.Warn("say that a reply part is missing", "reply", pi.part.Reply, "err", err)
		}
	}
	id := partID(pi.part, hi)
	rec, added, err := p.o.Store.AddReply(buffer.Reply{ID: id, InReplyTo: r.InReplyTo, Text: notice, Lang: r.Lang,
		Urgent: r.Urgent, ExpiresAt: time.Now().UTC(), State: buffer.ReplyState(protocol.OutcomeMissing)})
	if err != nil {
		p.log.Error("store missing reply part", "id", id, "err", err)
		return
	}
	if !added {
		return // it arrived meanwhile
	}
	p.finish(rec, protocol.OutcomeMissing, reason)
}

// missingNotice is what the device says for missing parts lo..hi of n, and
// how the ack names them.
// n is 0 for a streamed answer (its length is not known).
func missingNotice(lang string, lo, hi, n int) (notice, what string) {
	if n == 0 {
		if lo == hi {
			what = fmt.Sprintf("part %d", lo)
			if lang == "nl" {
				return fmt.Sprintf("Deel %d van dit antwoord is niet aangekomen.", lo), what
			}
			return fmt.Sprintf("Part %d of this answer did not arrive.", lo), what
		}
		what = fmt.Sprintf("parts %d to %d", lo, hi)
		if lang == "nl" {
			return fmt.Sprintf("Delen %d tot en met %d van dit antwoord zijn niet aangekomen.", lo, hi), what
		}
		return fmt.Sprintf("Parts %d to %d of this answer did not arrive.", lo, hi), what
	}
	if lo == hi {
		what = fmt.Sprintf("part %d of %d", lo, n)
		if lang == "nl" {
			return fmt.Sprintf("Deel %d van %d van dit antwoord is niet aangekomen.", lo, n), what
		}
		return fmt.Sprintf("Part %d of %d of this answer did not arrive.", lo, n), what
	}
	what = fmt.Sprintf("parts %d to %d of %d", lo, hi, n)
	if lang == "nl" {
		return fmt.Sprintf("Delen %d tot en met %d van %d van dit antwoord zijn niet aangekomen.", lo, hi, n), what
	}
	return fmt.Sprintf("Parts %d to %d of %d of this answer did not arrive.", lo, hi, n), what
}

// sayNotice speaks a short text of the device's own (not a stored reply),
// as speak does: one voice at a time, muted capture, push-to-talk cuts it.
func (p *Player) sayNotice(ctx context.Context, id, text, lang string) error {
	spk, err := p.o.Speaker()
	if err != nil {
		return fmt.Errorf("speaker: %w", err)
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p.mu.Lock()
	p.speaking, p.cancel, p.interrupt = id, cancel, ""
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.speaking, p.cancel = "", nil
		p.mutedUntil = time.Now().Add(p.o.Tail)
		p.mu.Unlock()
	}()
	stream, _, err := synthesize(pctx, p.o.Engine, text, lang, p.o.MaxChars)
	if err != nil {
		return fmt.Errorf("synthesize: %w", err)
	}
	defer stream.Close()
	done, err := spk.PlayStream(pctx, stream, func(time.Time) {})
	if err != nil {
		return fmt.Errorf("play: %w", err)
	}
	return <-done
}
