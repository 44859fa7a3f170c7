package daemon

import (
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/wake"
)

// Store is what the router needs from the durable store.
type Store interface {
	Mode() (buffer.Mode, error)
	SetMode(mode buffer.Mode) error
	AppendListen(rec buffer.Record) (buffer.Record, error)
	EnqueueUtterance(rec buffer.Record) (buffer.Entry, error)
	FlushListen(offline bool) (buffer.Entry, int, error)
	ListenCount() (int, error)
	DropAudio(id string) error
	ReleaseAudio(id string) error
}

// Matcher finds wake phrases in a transcript.
type Matcher interface {
	Match(text string) wake.Match
	MatchSpot(text string, words []wake.Word, s wake.Spot) wake.Match
}

// Sounder plays a named earcon; it must not block on the audio device.
type Sounder interface {
	Play(name string)
}

// Heard is one piece of text entering the router: a transcript of an
// utterance, a typed note (agoractl say) or another app's dictation. All
// enter the same way, so wake phrases and modes apply to each.
type Heard struct {
	Text       string
	Lang       string
	Confidence float64
	StartedAt  time.Time
	Duration   time.Duration
	Source     string // "mic", "ptt", "typed", "file:<name>", "journal"
	AudioID    string // journal entry of the audio; released when the text is stored
	// Spot is the keyword spotter's verdict on the audio (nil: it did not
	// score it); Words place the name it heard in the text
	// (wake.Rules.MatchSpot fuses the two).
	Spot  *wake.Spot
	Words []wake.Word
}

// Outcome says what the router did with one Heard, for status, metrics and tests.
type Outcome struct {
	Stored     int    // notes appended to the listen buffer
	Sent       int    // utterances queued for the backend
	Kept       int    // of those, kept without the store, which had failed
	KeptAs     string // how the last of those was kept: KeptUnstored or KeptInMemory
	ID         string // id of the last record stored or utterance queued
	BatchID    string // id of the flushed listen-buffer batch, "" when none
	BatchSeq   uint64
	BatchCount int
	ModeBefore buffer.Mode
	ModeAfter  buffer.Mode
	Wake       wake.Action
}
