package bridge

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agora/agorad/sync/agui"
	"github.com/agora/agorad/sync/protocol"
)

// bad counts and logs refused input and returns "reason: what" for a dead
// letter.
func (b *Bridge) bad(reason, what, topic string, payload []byte) string {
	b.m.BadInput.WithLabelValues(reason).Inc()
	b.log.Warn("device message refused", "reason", reason, "what", what, "topic", excerptString(topic),
		"payload", agui.Excerpt(payload))
	return reason + ": " + what
}

func excerptString(s string) string {
	if len(s) > agui.ExcerptLen {
		return s[:agui.ExcerptLen] + "…"
	}
	return s
}

// envelope decodes and checks the common header against the topic; a
// refusal is counted, logged and returned as "reason: what" ("" when ok).
func (b *Bridge) envelope(device, wantType, topic string, payload []byte, v any) (protocol.Envelope, string) {
	var env protocol.Envelope
	if err := json.Unmarshal(payload, &env); err != nil {
		return env, b.bad("json", "not protocol JSON: "+err.Error(), topic, payload)
	}
	var problem, reason string
	switch {
	case env.V != protocol.Version:
		problem, reason = fmt.Sprintf("v %d, want %d", env.V, protocol.Version), "version"
	case env.DeviceID != device:
		problem, reason = fmt.Sprintf("device_id %q does not match the topic's %q", excerptString(env.DeviceID), device), "device_mismatch"
	case wantType != "" && env.Type != wantType:
		problem, reason = fmt.Sprintf("type %q on a %s topic", excerptString(env.Type), wantType), "type"
	case !validID(env.ID):
		problem, reason = "missing or malformed id (1-128 of A-Z a-z 0-9 . _ = -, no leading, trailing or double '.')", "id"
	}
	if problem != "" {
		return env, b.bad(reason, problem, topic, payload)
	}
	if v != nil {
		if err := json.Unmarshal(payload, v); err != nil {
			return env, b.bad("json", "body: "+err.Error(), topic, payload)
		}
	}
	return env, ""
}

// validID accepts the device's UUIDv7 ids and anything else that is safe in
// store keys, NATS KV keys and command ids: a KV key is dot-separated
// tokens, so an id may not start or end with '.' nor hold "..".
func validID(id string) bool {
	if id == "" || len(id) > 128 || id[0] == '.' || id[len(id)-1] == '.' || strings.Contains(id, "..") {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == '=') {
			return false
		}
	}
	return true
}
