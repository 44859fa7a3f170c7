package protocol

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
)
