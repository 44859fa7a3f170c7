package protocol

import (
	"encoding/json"
	"strings"
	"time"
)

// CmdReply is the backend's answer to an utterance or batch, to be spoken on
// the device: {"id","type":"reply","in_reply_to","text","spoken","lang",
// "urgent","expires_at"}. The device answers every reply with an ack whose
// outcome is one of the Outcome values.
const CmdReply = "reply"

// ReplyCommand is the JSON form of a reply command as the backend (the
// bridge) publishes it on agora/v1/<device_id>/commands. Only id, type and
// text are required; spoken defaults to text, lang to the language of the
// utterance it answers, expires_at to arrival + the device's replies.max_age.
type ReplyCommand struct {
	ID        string `json:"id"`
	Type      string `json:"type"` // always CmdReply
	InReplyTo string `json:"in_reply_to,omitempty"`
	Text      string `json:"text"`
	Spoken    string `json:"spoken,omitempty"`
	Lang      string `json:"lang,omitempty"`   // "nl" or "en"
	Urgent    bool   `json:"urgent,omitempty"` // spoken even in listen mode
	ExpiresAt string `json:"expires_at,omitempty"`
}

// Reply outcomes, carried in the device's ack to a reply command.
const (
	OutcomeSpoken      = "spoken"
	OutcomeInterrupted = "interrupted"
	OutcomeExpired     = "expired"
	OutcomeHeld        = "held"
	OutcomeFailed      = "failed"
	// OutcomeDropped: never spoken, because more replies were waiting
	// than the device keeps (buffer.MaxReplies); the oldest waiting one
	// makes room for the new one.
	OutcomeDropped = "dropped"
)

// Limits on a reply command (besides MaxCommandBytes for the whole payload).
const (
	MaxReplyTextBytes = 8 << 10 // text and spoken, each
)

// Reply is a validated reply command. Defaults are not applied here (they
// depend on the device: its language, replies.max_age).
type Reply struct {
	ID        string
	InReplyTo string
	Text      string
	Spoken    string // "" means: say Text
	Lang      string // "nl", "en" or "" (the device decides)
	Urgent    bool
	ExpiresAt time.Time // zero: not given
}

// SpokenText is what is to be said: Spoken, else Text.
func (r Reply) SpokenText() string {
	if strings.TrimSpace(r.Spoken) != "" {
		return r.Spoken
	}
	return r.Text
}

// parseReply checks the reply-specific fields (the common ones are checked
// by ParseCommand).
func parseReply(fields map[string]json.RawMessage) (Reply, error) {
	var r Reply
	var err error
	if r.InReplyTo, err = stringField(fields, "in_reply_to", false); err != nil {
		return r, err
	}
	if _, ok := fields["in_reply_to"]; ok {
		if err := checkID("in_reply_to", r.InReplyTo); err != nil {
			return r, err
		}
	}
	if r.Text, err = stringField(fields, "text", true); err != nil {
		return r, err
	}
	if strings.TrimSpace(r.Text) == "" {
		return r, cmdErr("text", "empty")
	}
	if len(r.Text) > MaxReplyTextBytes {
		return r, cmdErr("text", "%d bytes, longer than %d", len(r.Text), MaxReplyTextBytes)
	}
	if r.Spoken, err = stringField(fields, "spoken", false); err != nil {
		return r, err
	}
	if _, ok := fields["spoken"]; ok && strings.TrimSpace(r.Spoken) == "" {
		return r, cmdErr("spoken", "empty (leave it out to speak text)")
	}
	if len(r.Spoken) > MaxReplyTextBytes {
		return r, cmdErr("spoken", "%d bytes, longer than %d", len(r.Spoken), MaxReplyTextBytes)
	}
	if r.Lang, err = stringField(fields, "lang", false); err != nil {
		return r, err
	}
	if _, ok := fields["lang"]; ok && r.Lang != "nl" && r.Lang != "en" {
		return r, cmdErr("lang", "%q is not \"nl\" or \"en\"", r.Lang)
	}
	if raw, ok := fields["urgent"]; ok {
		if err := json.Unmarshal(raw, &r.Urgent); err != nil || string(raw) == "null" {
			return r, cmdErr("urgent", "must be true or false, got %s", excerpt(raw))
		}
	}
	exp, err := stringField(fields, "expires_at", false)
	if err != nil {
		return r, err
	}
	if _, ok := fields["expires_at"]; ok {
		t, err := time.Parse(time.RFC3339Nano, exp)
		if err != nil {
			return r, cmdErr("expires_at", "%q is not an RFC 3339 time (2026-03-01T09:00:00Z)", exp)
		}
		r.ExpiresAt = t
	}
	return r, nil
}
