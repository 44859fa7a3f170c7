package buffer

import "time"

// Lane orders the outbox. LaneControl (acks, pongs, replies to the backend)
// drains before LaneData. LaneData carries utterances and listen-buffer
// batches strictly in Seq order, so a batch flushed by the wake phrase always
// reaches the backend before the command spoken after it.
type Lane uint8

const (
	LaneControl Lane = 0
	LaneData    Lane = 1
)

// Kind says what an outbox entry is; sync/protocol renders each kind.
type Kind string

const (
	KindUtterance Kind = "utterance" // a feedback-mode utterance (one per message)
	KindBatch     Kind = "batch"     // a flushed listen buffer (one message, items in order)
	KindAck       Kind = "ack"       // reply to an inbound command
	KindEvent     Kind = "event"     // device events (mode changed, storage refused, ...)
)

// Record is one utterance as stored in the listen buffer or inside a batch.
type Record struct {
	ID         string    `json:"id"`  // UUIDv7, assigned by the store when empty
	Seq        uint64    `json:"seq"` // per-device sequence, assigned by the store
	Text       string    `json:"text"`
	Lang       string    `json:"lang,omitempty"`
	Confidence float64   `json:"confidence,omitempty"`
	StartedAt  time.Time `json:"started_at"`         // wall clock when speech started
	DurationMS int64     `json:"duration_ms"`        // speech length
	Source     string    `json:"source,omitempty"`   // "mic", "file:<name>", "typed", "ptt"
	Offline    bool      `json:"offline"`            // produced while the uplink was down
	AudioID    string    `json:"audio_id,omitempty"` // journal key when audio is retained
	CreatedAt  time.Time `json:"created_at"`         // when the store accepted it
	// KeepJournal stores the record without consuming AudioID's journal
	// entry: more text from the same audio follows (the words before
	// "agora"), and the audio must stay journaled until the last of it is
	// stored. Not stored.
	KeepJournal bool `json:"-"`
}

// Entry is one outbox message waiting for delivery. Body is the kind-specific
// JSON that sync/protocol wraps with the envelope (id, seq, device_id,
// created_at, offline).
type Entry struct {
	ID        string    `json:"id"`  // UUIDv7, sortable
	Seq       uint64    `json:"seq"` // per-device, monotonic across lanes
	Lane      Lane      `json:"lane"`
	Kind      Kind      `json:"kind"`
	CreatedAt time.Time `json:"created_at"`
	Offline   bool      `json:"offline"`
	Body      []byte    `json:"body"`

	// Unreadable is set when the stored entry could not be read or decoded
	// (damage): ID is then a stand-in naming its place ("unreadable-<lane>-
	// <seq>", accepted by Delete), Kind is empty and Body holds whatever
	// bytes were read. The uplink sends it as a dead letter so that the
	// queue moves on and the loss is visible to the backend.
	Unreadable string `json:"unreadable,omitempty"`
	// StoreID is the store's incarnation (Store.StoreID), set by Pending.
	StoreID string `json:"store_id,omitempty"`
}

// BatchBody is the outbox Body of a KindBatch entry: a flushed listen
// buffer. FlushListen writes it; sync/protocol reads it to render the
// batches message.
type BatchBody struct {
	Items []Record `json:"items"` // in Seq order
	Count int      `json:"count"` // len(Items)
}

// JournaledAudio is one utterance's audio written to the journal before
// transcription. PendingAudio returns those that have no stored text yet.
type JournaledAudio struct {
	ID        string    // UUIDv7; pass it as Record.AudioID when storing the text
	StartedAt time.Time // wall clock when the speech started
	Samples   []float32 // 16 kHz mono, quantised to 16 bits in the journal
}
