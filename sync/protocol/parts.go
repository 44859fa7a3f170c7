package protocol

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agora/agorad/buffer"
)

// The limits both ends of the link share. The device never publishes a
// message larger than MaxMessageBytes (a larger listen-buffer batch goes as
// numbered parts of one logical batch), and agora-bridge accepts every
// message up to MaxMessageBytes; the bridge sends no reply command larger
// than MaxCommandBytes (a longer answer goes as numbered reply parts, each
// text at most MaxReplyTextBytes). Tests hold each side to the other's limit.
const (
	// MaxMessageBytes is the largest device message (utterance, batch part,
	// event, ack): the bridge's default and minimum max_payload. It stays
	// well under NATS's default max_payload of 1 MiB.
	MaxMessageBytes = 256 << 10
	// MaxParts bounds the parts of one batch: MaxParts * MaxMessageBytes
	// (256 MiB) is far above the largest listen buffer the store can hold
	// (one Badger value, 16 MiB).
	MaxParts = 1024
)

// BatchPart numbers one part of a batch too large for one message: every
// part carries the batch's envelope (id, seq, store_id) and Context (the
// whole batch's messageCount); Items are the part's notes, in order.
type BatchPart struct {
	Index int `json:"index"` // 1-based
	Of    int `json:"of"`    // number of parts, 2..MaxParts
}

// RenderParts is Render for the uplink: one payload per message to publish.
// A batch whose message would exceed MaxMessageBytes is split into numbered
// parts, each at most MaxMessageBytes; every other entry is one message.
func RenderParts(deviceID string, e buffer.Entry) (topic string, payloads [][]byte, err error) {
	topic, payload, err := Render(deviceID, e)
	if err != nil {
		return "", nil, err
	}
	if len(payload) <= MaxMessageBytes || e.Kind != buffer.KindBatch {
		return topic, [][]byte{payload}, nil
	}
	var whole Batch
	if err := json.Unmarshal(payload, &whole); err != nil {
		return "", nil, fmt.Errorf("split batch entry %s: %w", e.ID, err)
	}
	payloads, err = splitBatch(whole, MaxMessageBytes)
	if err != nil {
		return "", nil, fmt.Errorf("split batch entry %s: %w", e.ID, err)
	}
	return topic, payloads, nil
}

// splitBatch cuts b's items into consecutive parts whose messages are at
// most limit bytes each.
func splitBatch(b Batch, limit int) ([][]byte, error) {
	// The header of a part without items, with the widest part numbers.
	head := b
	head.Items, head.Count, head.Part = []Item{}, 0, &BatchPart{Index: MaxParts, Of: MaxParts}
	hb, err := json.Marshal(head)
	if err != nil {
		return nil, err
	}
	const countDigits = 10 // room for "count" growing from 0
	room := limit - len(hb) - countDigits
	var groups [][]Item
	var cur []Item
	size := 0
	for i, it := range b.Items {
		ib, err := json.Marshal(it)
		if err != nil {
			return nil, err
		}
		n := len(ib) + 1 // the comma
		if n > room {
			return nil, fmt.Errorf("item %d (%s) alone is %d bytes, more than a %d-byte message can carry", i, it.ID, len(ib), limit)
		}
		if size+n > room {
			groups, cur, size = append(groups, cur), nil, 0
		}
		cur, size = append(cur, it), size+n
	}
	groups = append(groups, cur)
	if len(groups) > MaxParts {
		return nil, fmt.Errorf("%d parts, more than %d", len(groups), MaxParts)
	}
	out := make([][]byte, len(groups))
	for i, g := range groups {
		p := b
		p.Items, p.Count, p.Part = g, len(g), &BatchPart{Index: i + 1, Of: len(groups)}
		if out[i], err = json.Marshal(p); err != nil {
			return nil, err
		}
		if len(out[i]) > limit {
			return nil, fmt.Errorf("part %d is %d bytes, over %d", i+1, len(out[i]), limit)
		}
	}
	return out, nil
}

// ValidatePart checks a received batch's part numbering against the whole
// batch's messageCount.
func ValidatePart(b Batch) error {
	if b.Part == nil {
		return nil
	}
	p := *b.Part
	switch {
	case p.Of < 2 || p.Of > MaxParts:
		return fmt.Errorf("part.of %d, want 2..%d", p.Of, MaxParts)
	case p.Index < 1 || p.Index > p.Of:
		return fmt.Errorf("part.index %d, want 1..%d", p.Index, p.Of)
	case b.Context.MessageCount < p.Of:
		return fmt.Errorf("context.messageCount %d with %d parts", b.Context.MessageCount, p.Of)
	}
	return nil
}

// JoinParts reassembles the parts of one batch (in any order) into the
// batch the device flushed; it checks they agree and add up.
func JoinParts(parts []Batch) (Batch, error) {
	if len(parts) == 0 {
		return Batch{}, fmt.Errorf("join batch parts: none")
	}
	first := parts[0]
	if first.Part == nil {
		return Batch{}, fmt.Errorf("join batch %s: part without numbering", first.ID)
	}
	n := first.Part.Of
	byIndex := make([]*Batch, n)
	for i := range parts {
		p := &parts[i]
		if p.Part == nil || p.Part.Of != n || p.ID != first.ID || p.Seq != first.Seq || p.Context != first.Context {
			return Batch{}, fmt.Errorf("join batch %s: part %d does not match the others", first.ID, i)
		}
		if err := ValidatePart(*p); err != nil {
			return Batch{}, fmt.Errorf("join batch %s: %w", first.ID, err)
		}
		byIndex[p.Part.Index-1] = p
	}
	whole := first
	whole.Part, whole.Items = nil, nil
	for i, p := range byIndex {
		if p == nil {
			return Batch{}, fmt.Errorf("join batch %s: part %d of %d missing", first.ID, i+1, n)
		}
		whole.Items = append(whole.Items, p.Items...)
	}
	whole.Count = len(whole.Items)
	if whole.Count != whole.Context.MessageCount {
		return Batch{}, fmt.Errorf("join batch %s: %d items in %d parts, messageCount %d", first.ID, whole.Count, n, whole.Context.MessageCount)
	}
	return whole, nil
}

// SplitReply cuts a reply whose command would exceed MaxCommandBytes (or
// whose text would exceed MaxReplyTextBytes) into numbered reply commands
// ("<id>.p<i>of<n>"), each a valid reply with the same in_reply_to, lang,
// urgent and expires_at, its text and spoken cut at sentence ends where
// possible, so the device speaks them one after the other as one answer. A
// reply that fits is returned unchanged, alone.
func SplitReply(r ReplyCommand) []ReplyCommand {
	if replyFits(r) {
		return []ReplyCommand{r}
	}
	for chunk := MaxReplyTextBytes; ; chunk /= 2 {
		parts := splitReply(r, chunk)
		ok := true
		for _, p := range parts {
			ok = ok && replyFits(p)
		}
		if ok || chunk < 256 {
			return parts
		}
	}
}

func replyFits(r ReplyCommand) bool {
	b, err := json.Marshal(r)
	return err == nil && len(b) <= MaxCommandBytes && len(r.Text) <= MaxReplyTextBytes && len(r.Spoken) <= MaxReplyTextBytes
}

func splitReply(r ReplyCommand, chunk int) []ReplyCommand {
	texts := cutText(r.Text, chunk)
	var spokens []string
	if r.Spoken != "" {
		spokens = cutText(r.Spoken, chunk)
	}
	n := max(len(texts), len(spokens))
	out := make([]ReplyCommand, n)
	for i := range out {
		p := r
		p.ID = fmt.Sprintf("%s.p%dof%d", r.ID, i+1, n)
		p.Text, p.Spoken = "", ""
		if i < len(texts) {
			p.Text = texts[i]
		}
		if i < len(spokens) {
			p.Spoken = spokens[i]
		}
		switch {
		case p.Text == "":
			// text is required: a part with only spoken text shows that.
			p.Text, p.Spoken = p.Spoken, ""
		case r.Spoken != "" && p.Spoken == "":
			// The spoken form ran out first: say nothing more than a
			// short pause would (spoken defaults to text otherwise).
			p.Spoken = "."
		}
		out[i] = p
	}
	return out
}

// cutText splits s into pieces of at most limit bytes, each ending after a
// sentence end (newline, ". ", "? ", "! ") when one lies in its second
// half, else after a space, else at a rune boundary. Pieces that are only
// white space are dropped (nothing to show or say).
func cutText(s string, limit int) []string {
	var out []string
	add := func(piece string) {
		if strings.TrimSpace(piece) != "" {
			out = append(out, piece)
		}
	}
	for len(s) > limit {
		cut := -1
		for _, sep := range []string{"\n", ". ", "? ", "! "} {
			if i := strings.LastIndex(s[:limit], sep); i >= 0 && i+len(sep) > cut {
				cut = i + len(sep)
			}
		}
		if cut < limit/2 {
			if i := strings.LastIndex(s[:limit], " "); i >= limit/2 {
				cut = i + 1
			} else {
				cut = limit
				for cut > 1 && !utf8.RuneStart(s[cut]) {
					cut--
				}
			}
		}
		add(s[:cut])
		s = s[cut:]
	}
	add(s)
	return out
}
