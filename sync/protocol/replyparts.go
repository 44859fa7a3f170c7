package protocol

import (
	"fmt"
	"strconv"
	"strings"
)

// Reply parts are sized for speech, not for the broker: a part of 8 KiB
// takes about ten minutes to say, and the parts behind it used to expire
// while it was spoken (issue 49). The bridge cuts an answer into parts of
// about ReplyPartSeconds of speech each; the device speaks a reply's parts
// in index order and counts each part's expiry from the end of the one
// before it (cmd/agorad/internal/replies).
const (
	// ReplyPartSeconds is the speech a reply part holds, at most, at
	// SpeechCharsPerSecond.
	ReplyPartSeconds = 25
	// SpeechCharsPerSecond is a pace espeak-ng at the device's default
	// rate (tts.rate 150 words a minute) does not fall below on the
	// answers measured: 14.5 characters a second on plain Dutch and
	// English sentences, 10.9 on the reference graph's long answers, whose
	// numbers are said in words ("Zin tweeënveertig"). Slower rates make
	// parts longer in time (at 120 wpm, about 31 s).
	SpeechCharsPerSecond = 10
	// ReplyPartBytes is the text a speech-sized part holds: 250 bytes,
	// at most ReplyPartSeconds of speech at SpeechCharsPerSecond (a
	// character is at least a byte).
	ReplyPartBytes = ReplyPartSeconds * SpeechCharsPerSecond
	// MaxSpeechParts bounds the parts of one answer: a device keeps at most
	// buffer.MaxReplies (500) replies waiting, and drops the oldest for a
	// newer one beyond. An answer longer than this many parts (about 1 h 45
	// min of speech) gets longer parts, up to SplitReply's 8 KiB.
	MaxSpeechParts = 256
	// MaxReplyParts bounds the parts of one reply a device accepts as
	// parts (a 2 MB answer is about 8,000 parts).
	MaxReplyParts = 9999
)

// OutcomeMissing acks a reply part that never arrived: the device waited
// for it (replies.part_wait), said so aloud, and went on with the next part.
// ok is false. The command_id is the missing part's id, which the device
// knows from its neighbours (<reply id>.p<i>of<n>).
const OutcomeMissing = "missing"

// ReplyPart names one part of a reply cut into parts: the command's id is
// "<Reply>.p<Index>of<Of>".
type ReplyPart struct {
	Reply string // id of the whole reply
	Index int    // 1-based
	Of    int    // 2..MaxReplyParts; 0 for a streamed part (streamparts.go)
	// Stream: a streamed part "<Reply>.s<Index>" (Last: "…e", the last).
	Stream, Last bool
}

// ID is the command id of the part.
func (p ReplyPart) ID() string {
	if p.Stream {
		return StreamPartID(p.Reply, p.Index, p.Last)
	}
	return PartID(p.Reply, p.Index, p.Of)
}

// PartID is the command id of part index of n of reply id.
func PartID(id string, index, n int) string { return fmt.Sprintf("%s.p%dof%d", id, index, n) }

// ParseReplyPart reads a reply command id of the form "<reply id>.p<i>of<n>"
// (1 <= i <= n, 2 <= n <= MaxReplyParts, no leading zeros) or a streamed
// part's "<reply id>.s<i>[e]"; ok is false for any other id, which is a
// whole reply.
func ParseReplyPart(id string) (ReplyPart, bool) {
	if p, ok := parseStreamPart(id); ok {
		return p, true
	}
	dot := strings.LastIndex(id, ".p")
	if dot <= 0 {
		return ReplyPart{}, false
	}
	idx, n, found := strings.Cut(id[dot+2:], "of")
	if !found {
		return ReplyPart{}, false
	}
	num := func(s string) int {
		if s == "" || len(s) > 4 || s[0] == '0' {
			return 0
		}
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			return 0
		}
		return v
	}
	i, of := num(idx), num(n)
	if i < 1 || of < 2 || i > of || of > MaxReplyParts {
		return ReplyPart{}, false
	}
	return ReplyPart{Reply: id[:dot], Index: i, Of: of}, true
}

// SplitReplyForSpeech is SplitReply with parts of at most ReplyPartBytes of
// text and of spoken form (about ReplyPartSeconds of speech each), cut at
// sentence ends where possible; an answer that would take more than
// MaxSpeechParts such parts gets parts twice, four times... as long. A reply
// whose spoken form (spoken, else text) fits in one part, and whose command
// fits, is returned unchanged, alone, however long its written text.
func SplitReplyForSpeech(r ReplyCommand) []ReplyCommand {
	said := r.Text
	if r.Spoken != "" {
		said = r.Spoken
	}
	if replyFits(r) && len(said) <= ReplyPartBytes {
		return []ReplyCommand{r} // said in one part; the written form may be longer
	}
	for chunk := ReplyPartBytes; chunk < MaxReplyTextBytes; chunk *= 2 {
		parts := splitReply(r, chunk)
		if len(parts) == 1 { // only white space past the first part
			parts[0].ID = r.ID
			return parts
		}
		if len(parts) <= MaxSpeechParts {
			return parts
		}
	}
	return SplitReply(r)
}
