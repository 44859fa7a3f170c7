// Package protocol is the agorad wire format on MQTT: topic names, the JSON
// messages the device publishes (utterances, listen-buffer batches, status,
// acks, events) and strict validation of the commands it receives.
//
// docs/protocol.md is the reference for backend authors; this package is its
// executable form.
package protocol

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/agora/agorad/buffer"
)

// Version is the protocol version carried in every message as "v".
const Version = 1

// Topic names under agora/v1/<device_id>/.
const (
	TopicUtterances = "utterances" // feedback-mode utterances, one per message
	TopicBatches    = "batches"    // flushed listen buffers, one message per flush
	TopicStatus     = "status"     // retained device status (+ last will)
	TopicCommands   = "commands"   // inbound commands from the backend
	TopicAcks       = "acks"       // replies to commands (control lane)
	TopicEvents     = "events"     // device events and dead letters (control lane)
)

// Message types ("type" field).
const (
	TypeUtterance  = "utterance"
	TypeBatch      = "batch"
	TypeStatus     = "status"
	TypeAck        = "ack"
	TypeEvent      = "event"
	TypeDeadLetter = "dead_letter"
)

// timeLayout is RFC 3339 in UTC with milliseconds, fixed width so that
// timestamps also sort as strings.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// FormatTime renders t the way every timestamp on the wire is rendered.
func FormatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeLayout)
}

// Topic returns "agora/v1/<deviceID>/<name>". deviceID must satisfy
// ValidateDeviceID; Render checks it.
func Topic(deviceID, name string) string {
	return "agora/v1/" + deviceID + "/" + name
}

// ValidateDeviceID is the one check of a device id (the configuration's
// device_id, the uplink, every rendered message): 1 to 64 letters, digits,
// '.', '_' or '-', so it can never break the topic tree (MQTT level
// separators, wildcards, '$' topics) or the client id.
func ValidateDeviceID(id string) error {
	if !deviceIDRe.MatchString(id) {
		return fmt.Errorf("device_id: %q is not 1 to 64 letters, digits, '.', '_' or '-' (it is part of MQTT topics)", id)
	}
	return nil
}

var deviceIDRe = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Envelope is the header of every outgoing message.
type Envelope struct {
	V        int    `json:"v"`
	Type     string `json:"type"`
	ID       string `json:"id"`
	Seq      uint64 `json:"seq"`
	DeviceID string `json:"device_id"`
	// StoreID is the incarnation of the device's store that assigned seq
	// (buffer.Store.StoreID): a rebuilt store starts a new one, so
	// (device_id, store_id, seq) is unique for good.
	StoreID   string `json:"store_id,omitempty"`
	CreatedAt string `json:"created_at"`
	Offline   bool   `json:"offline"`

	// Unstored: the device's storage had failed, so this message was sent
	// without being stored (seq 0, no store_id; sent once, never re-sent).
	Unstored bool `json:"unstored,omitempty"`
}

// Item is one utterance, alone on the utterances topic or inside a batch.
type Item struct {
	ID         string  `json:"id"`
	Seq        uint64  `json:"seq"`
	Text       string  `json:"text"`
	Lang       string  `json:"lang,omitempty"`
	Confidence float64 `json:"confidence"`
	StartedAt  string  `json:"started_at,omitempty"`
	DurationMS int64   `json:"duration_ms"`
	Source     string  `json:"source,omitempty"`
	Offline    bool    `json:"offline"`
	CreatedAt  string  `json:"created_at,omitempty"`
}

// Utterance is the message on the utterances topic. The envelope id/seq are
// the outbox entry's; record_id is the stored record's id when it differs.
type Utterance struct {
	Envelope
	RecordID   string  `json:"record_id,omitempty"`
	Text       string  `json:"text"`
	Lang       string  `json:"lang,omitempty"`
	Confidence float64 `json:"confidence"`
	StartedAt  string  `json:"started_at,omitempty"`
	DurationMS int64   `json:"duration_ms"`
	Source     string  `json:"source,omitempty"`
}

// BatchContext mirrors the AGORA web client's run context for a batch of
// messages recorded without feedback.
type BatchContext struct {
	IsOfflineBatch bool `json:"isOfflineBatch"`
	MessageCount   int  `json:"messageCount"`
}

// Batch is the message on the batches topic: a whole listen buffer.
type Batch struct {
	Envelope
	Count   int          `json:"count"`
	Items   []Item       `json:"items"`
	Context BatchContext `json:"context"`
	// Part numbers one part of a batch too large for one message
	// (RenderParts); absent when the batch is whole.
	Part *BatchPart `json:"part,omitempty"`
}

// AckBody is the outbox Body of a buffer.KindAck entry: the device's reply to
// a command.
type AckBody struct {
	CommandID   string `json:"command_id"`
	CommandType string `json:"command_type"`
	OK          bool   `json:"ok"`
	Error       string `json:"error,omitempty"`
	Mode        string `json:"mode,omitempty"` // the mode after a set_mode
	// Outcome answers a reply command: spoken, interrupted, expired, held
	// (an interim answer, followed by another ack) or failed (Error says why).
	Outcome string `json:"outcome,omitempty"`
}

// EventBody is the outbox Body of a buffer.KindEvent entry.
type EventBody struct {
	Event  string         `json:"event"` // e.g. "mode_changed", "storage_full"
	Detail map[string]any `json:"detail,omitempty"`
}

// DeadLetter carries an outbox entry that could not be rendered, so that a
// corrupt entry neither blocks the outbox nor disappears.
type DeadLetter struct {
	Envelope
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
	Body   string `json:"body_base64"`
}

func envelope(typ, deviceID string, e buffer.Entry) Envelope {
	return Envelope{V: Version, Type: typ, ID: e.ID, Seq: e.Seq, DeviceID: deviceID, StoreID: e.StoreID,
		CreatedAt: FormatTime(e.CreatedAt), Offline: e.Offline}
}

func item(r buffer.Record) Item {
	return Item{ID: r.ID, Seq: r.Seq, Text: r.Text, Lang: r.Lang, Confidence: r.Confidence,
		StartedAt: FormatTime(r.StartedAt), DurationMS: r.DurationMS, Source: r.Source,
		Offline: r.Offline, CreatedAt: FormatTime(r.CreatedAt)}
}

// Render builds the topic and JSON payload for an outbox entry. The error
// names the entry and what is wrong with it.
func Render(deviceID string, e buffer.Entry) (topic string, payload []byte, err error) {
	if err := ValidateDeviceID(deviceID); err != nil {
		return "", nil, fmt.Errorf("render entry %s: %w", e.ID, err)
	}
	if e.ID == "" {
		return "", nil, fmt.Errorf("render entry seq %d: empty id", e.Seq)
	}
	if e.Unreadable != "" {
		return "", nil, fmt.Errorf("render entry seq %d: unreadable in the store: %s", e.Seq, e.Unreadable)
	}
	var msg any
	switch e.Kind {
	case buffer.KindUtterance:
		var r buffer.Record
		if err := json.Unmarshal(e.Body, &r); err != nil {
			return "", nil, fmt.Errorf("render utterance entry %s: body: %w", e.ID, err)
		}
		u := Utterance{Envelope: envelope(TypeUtterance, deviceID, e), Text: r.Text, Lang: r.Lang,
			Confidence: r.Confidence, StartedAt: FormatTime(r.StartedAt), DurationMS: r.DurationMS, Source: r.Source}
		if r.ID != "" && r.ID != e.ID {
			u.RecordID = r.ID
		}
		topic, msg = TopicUtterances, u
	case buffer.KindBatch:
		var b buffer.BatchBody
		if err := json.Unmarshal(e.Body, &b); err != nil {
			return "", nil, fmt.Errorf("render batch entry %s: body: %w", e.ID, err)
		}
		if b.Count != len(b.Items) {
			return "", nil, fmt.Errorf("render batch entry %s: body count %d but %d items", e.ID, b.Count, len(b.Items))
		}
		items := make([]Item, len(b.Items))
		for i, r := range b.Items {
			items[i] = item(r)
		}
		topic, msg = TopicBatches, Batch{Envelope: envelope(TypeBatch, deviceID, e), Count: len(items), Items: items,
			Context: BatchContext{IsOfflineBatch: true, MessageCount: len(items)}}
	case buffer.KindAck:
		var a AckBody
		if err := strictUnmarshal(e.Body, &a); err != nil {
			return "", nil, fmt.Errorf("render ack entry %s: body: %w", e.ID, err)
		}
		topic, msg = TopicAcks, struct {
			Envelope
			AckBody
		}{envelope(TypeAck, deviceID, e), a}
	case buffer.KindEvent:
		var ev EventBody
		if err := strictUnmarshal(e.Body, &ev); err != nil {
			return "", nil, fmt.Errorf("render event entry %s: body: %w", e.ID, err)
		}
		if ev.Event == "" {
			return "", nil, fmt.Errorf("render event entry %s: body: empty event name", e.ID)
		}
		topic, msg = TopicEvents, struct {
			Envelope
			EventBody
		}{envelope(TypeEvent, deviceID, e), ev}
	default:
		return "", nil, fmt.Errorf("render entry %s: unknown kind %q", e.ID, e.Kind)
	}
	payload, err = json.Marshal(msg)
	if err != nil {
		return "", nil, fmt.Errorf("render %s entry %s: %w", e.Kind, e.ID, err)
	}
	return Topic(deviceID, topic), payload, nil
}

// RenderDeadLetter wraps an entry Render refused (reason) on the events
// topic, body base64-encoded, so it can be delivered and deleted.
func RenderDeadLetter(deviceID string, e buffer.Entry, reason string) (topic string, payload []byte, err error) {
	if err := ValidateDeviceID(deviceID); err != nil {
		return "", nil, fmt.Errorf("render dead letter %s: %w", e.ID, err)
	}
	payload, err = json.Marshal(DeadLetter{Envelope: envelope(TypeDeadLetter, deviceID, e), Kind: string(e.Kind),
		Reason: reason, Body: base64.StdEncoding.EncodeToString(e.Body)})
	if err != nil {
		return "", nil, fmt.Errorf("render dead letter %s: %w", e.ID, err)
	}
	return Topic(deviceID, TopicEvents), payload, nil
}

func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after JSON value")
	}
	return nil
}

// Status is the device state published retained on the status topic, and
// (with Online false) registered as the MQTT last will.
type Status struct {
	Mode      string    // "listen" or "feedback"
	Buffered  int       // utterances in the listen buffer
	Outbox    int       // entries waiting for delivery
	Online    bool      // false in the last will and the goodbye message
	Version   string    // agorad version
	Model     string    // whisper model name
	StoreID   string    // the store's incarnation (buffer.Store.StoreID)
	UpdatedAt time.Time // when this status was taken

	Storage *StorageHealth // nil while the storage is ok (storage.go)
}

// StatusMessage is the JSON form of Status. Status is not an outbox entry:
// its id is fresh per publish and seq is 0 (outside the data sequence).
type StatusMessage struct {
	Envelope
	Mode      string `json:"mode"`
	Buffered  int    `json:"buffered"`
	Outbox    int    `json:"outbox"`
	Online    bool   `json:"online"`
	Version   string `json:"version"`
	Model     string `json:"model"`
	UpdatedAt string `json:"updated_at"`

	Storage *StorageHealth `json:"storage,omitempty"`
}

// RenderWill builds the last will: a status that says only that the device
// went offline. The will is registered at connect and sent by the broker
// perhaps hours later, so the mode and counts of the connect would be stale;
// it carries none (a reader keeps the ones of the last live status).
func RenderWill(deviceID, id, storeID string, at time.Time) (topic string, payload []byte, err error) {
	if err := ValidateDeviceID(deviceID); err != nil {
		return "", nil, fmt.Errorf("render last will: %w", err)
	}
	ts := FormatTime(at)
	payload, err = json.Marshal(struct {
		Envelope
		Online    bool   `json:"online"`
		UpdatedAt string `json:"updated_at"`
	}{Envelope{V: Version, Type: TypeStatus, ID: id, DeviceID: deviceID, StoreID: storeID, CreatedAt: ts, Offline: true}, false, ts})
	if err != nil {
		return "", nil, fmt.Errorf("render last will: %w", err)
	}
	return Topic(deviceID, TopicStatus), payload, nil
}

// RenderStatus builds the status topic and payload. id is the message id
// (callers use a fresh UUIDv7).
func RenderStatus(deviceID, id string, s Status) (topic string, payload []byte, err error) {
	if err := ValidateDeviceID(deviceID); err != nil {
		return "", nil, fmt.Errorf("render status: %w", err)
	}
	if s.UpdatedAt.IsZero() {
		s.UpdatedAt = time.Now()
	}
	ts := FormatTime(s.UpdatedAt)
	payload, err = json.Marshal(StatusMessage{
		Envelope: Envelope{V: Version, Type: TypeStatus, ID: id, DeviceID: deviceID, StoreID: s.StoreID, CreatedAt: ts, Offline: !s.Online},
		Mode:     s.Mode, Buffered: s.Buffered, Outbox: s.Outbox, Online: s.Online,
		Version: s.Version, Model: s.Model, UpdatedAt: ts, Storage: s.Storage,
	})
	if err != nil {
		return "", nil, fmt.Errorf("render status: %w", err)
	}
	return Topic(deviceID, TopicStatus), payload, nil
}
