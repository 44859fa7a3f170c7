// Package control is agorad's local control protocol: JSON lines over a unix
// socket (mode 0660, so the agorad user and group only). The daemon serves it
// with Listen and Serve and a Handler; agoractl talks to it with Dial and
// Client. Each request is one JSON object on one line; each answer is one
// line, except buffer.export, which streams one record per line before the
// final answer.
package control

import (
	"encoding/json"
	"time"
)

// Operations (the "op" of a request).
const (
	OpStatus       = "status"
	OpMode         = "mode"
	OpSay          = "say"
	OpBufferList   = "buffer.list"
	OpBufferExport = "buffer.export"
	OpBufferClear  = "buffer.clear"
	OpOutbox       = "outbox"
	OpFlush        = "flush"
	OpPTT          = "ptt"
)

var ops = []string{OpStatus, OpMode, OpSay, OpBufferList, OpBufferExport, OpBufferClear, OpOutbox, OpFlush, OpPTT,
	OpReplies, OpRepliesPlay, OpStop, OpOutboxDrop}

// Modes accepted by OpMode.
const (
	ModeListen   = "listen"
	ModeFeedback = "feedback"
)

// Request is one line sent by the client. Only the fields of its Op are used.
type Request struct {
	Op    string `json:"op"`
	Mode  string `json:"mode,omitempty"`  // OpMode: listen | feedback
	Text  string `json:"text,omitempty"`  // OpSay
	Limit int    `json:"limit,omitempty"` // OpBufferList, OpOutbox: 0 means the server's default
	Down  bool   `json:"down,omitempty"`  // OpPTT: true pressed, false released
	Yes   bool   `json:"yes,omitempty"`   // OpBufferClear: must be true (deleting is explicit)
	ID    string `json:"id,omitempty"`    // OpRepliesPlay: the reply ("" means every held one); OpOutboxDrop: the entry
}

// Response is the final line of every answer.
type Response struct {
	OK     bool            `json:"ok"`
	Error  string          `json:"error,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
}

// streamLine is one record of a buffer.export stream, before the Response.
type streamLine struct {
	Record *Record `json:"record"`
}

// Status is the daemon's state at a glance.
type Status struct {
	DeviceID       string         `json:"device_id"`
	Mode           string         `json:"mode"`
	Buffered       int            `json:"buffered"` // listen-buffer items
	Outbox         int            `json:"outbox"`   // outbox entries not yet confirmed by the broker
	Online         bool           `json:"online"`
	LastUtterance  *LastUtterance `json:"last_utterance,omitempty"`
	Model          string         `json:"model"`
	Version        string         `json:"version"`
	UptimeSeconds  float64        `json:"uptime_seconds"`
	Transcriptions uint64         `json:"transcriptions"`     // whisper calls that returned, since start
	Refused        uint64         `json:"refused"`            // items refused because the store was full, since start
	Speaking       string         `json:"speaking,omitempty"` // id of the reply being spoken
	RepliesWaiting int            `json:"replies_waiting"`    // replies queued or held, not yet spoken
	Speech         string         `json:"speech,omitempty"`   // synthesis engine and voices, or why speech is off
	// Unconfirmed: entries the broker accepted but the backend has not
	// confirmed within mqtt.ack_timeout (mqtt.delivery: backend).
	Unconfirmed int `json:"unconfirmed"`
	// Parked: outbox entries the backend refused and parked as dead
	// letters; the device keeps them (ParkedEntries: the first few).
	Parked        int           `json:"parked"`
	ParkedEntries []ParkedEntry `json:"parked_entries,omitempty"`
	// StuckSeconds: how long the oldest outbox entry has waited while
	// online, once past mqtt.stuck_after (0 otherwise).
	StuckSeconds float64 `json:"stuck_seconds,omitempty"`
	// Problems are degraded parts that do not stop the voice path (a
	// metrics listener that could not bind, ...).
	Problems []string `json:"problems,omitempty"`
	// Storage: the state directory's health: "ok", "failed (KIND since
	// TIME)" or "recovering (...)"; what failed and the fix are in Problems.
	Storage string `json:"storage,omitempty"`
	// Levels: the microphone as the wearer gate heard it over the last
	// minutes (nil: no hands-free capture running).
	Levels *Levels `json:"levels,omitempty"`
}

// Levels are the wearer gate's view of the microphone (audio/wearer),
// over its window (the last two minutes). Levels are dBFS.
type Levels struct {
	Gate         bool    `json:"gate"` // wearer.enabled
	Seconds      float64 `json:"seconds"`
	FloorDBFS    float64 `json:"floor_dbfs"`
	ExpectedDBFS float64 `json:"expected_dbfs"`
	// WearerDBFS: median level of the utterances kept (nil: none);
	// DroppedDBFS the same of those dropped as quieter than the wearer.
	WearerDBFS  *float64 `json:"wearer_dbfs,omitempty"`
	Utterances  int      `json:"utterances"`
	DroppedDBFS *float64 `json:"dropped_dbfs,omitempty"`
	Dropped     int      `json:"dropped"`
	Clipped     float64  `json:"clipped"` // share of 20 ms frames holding a clipped sample
}

// ParkedEntry is an outbox entry the backend parked, and why.
type ParkedEntry struct {
	ID     string    `json:"id"`
	Seq    uint64    `json:"seq"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// LastUtterance is the most recent transcription.
type LastUtterance struct {
	Text string    `json:"text"`
	At   time.Time `json:"at"`
}

// ModeResult answers OpMode.
type ModeResult struct {
	Previous string `json:"previous"`
	Mode     string `json:"mode"`
	Flushed  int    `json:"flushed"` // listen-buffer items sent as a batch by the switch to feedback
}

// SayResult answers OpSay: typed text takes the same path as a transcript
// (wake rules, then the listen buffer or the outbox).
type SayResult struct {
	Action  string `json:"action,omitempty"` // wake action: "", "feedback" or "listen"
	Mode    string `json:"mode"`             // mode after the text was handled
	Stored  string `json:"stored,omitempty"` // "listen_buffer", "outbox" or "" (nothing left after the wake phrase); store failed: "sent_unstored", "held_in_memory"
	ID      string `json:"id,omitempty"`     // id of the stored record or entry
	Flushed int    `json:"flushed,omitempty"`
}

// Record is one listen-buffer item (the daemon converts buffer.Record; this
// package does not import the store so agoractl stays small).
type Record struct {
	ID         string    `json:"id"`
	Seq        uint64    `json:"seq"`
	Text       string    `json:"text"`
	Lang       string    `json:"lang,omitempty"`
	Confidence float64   `json:"confidence,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	DurationMS int64     `json:"duration_ms"`
	Source     string    `json:"source,omitempty"`
	Offline    bool      `json:"offline"`
	AudioID    string    `json:"audio_id,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
}

// BufferList answers OpBufferList.
type BufferList struct {
	Total   int      `json:"total"` // items in the listen buffer (may exceed len(Records))
	Records []Record `json:"records"`
}

// ExportResult ends a buffer.export stream.
type ExportResult struct {
	Count int `json:"count"`
}

// ClearResult answers OpBufferClear.
type ClearResult struct {
	Deleted int `json:"deleted"`
}

// OutboxEntry describes one outbox message (not its body).
type OutboxEntry struct {
	ID        string    `json:"id"`
	Seq       uint64    `json:"seq"`
	Lane      string    `json:"lane"` // "control" or "data"
	Kind      string    `json:"kind"`
	CreatedAt time.Time `json:"created_at"`
	Offline   bool      `json:"offline"`
	Bytes     int       `json:"bytes"`
}

// Outbox answers OpOutbox.
type Outbox struct {
	Count   int           `json:"count"`
	Online  bool          `json:"online"`
	Entries []OutboxEntry `json:"entries"`
}

// FlushResult answers OpFlush: the listen buffer moved into the outbox as one
// batch, exactly as the wake phrase does, without changing the mode.
type FlushResult struct {
	Items   int    `json:"items"` // 0: the buffer was empty, nothing enqueued
	EntryID string `json:"entry_id,omitempty"`
	Seq     uint64 `json:"seq,omitempty"`
}

// PTTResult answers OpPTT.
type PTTResult struct {
	Down bool `json:"down"`
}
