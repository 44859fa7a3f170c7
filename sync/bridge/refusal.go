package bridge

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/agora/agorad/sync/protocol"
)

// parkedNotice is the parked command telling the device that message id
// was refused and parked here as a dead letter (with its content), and why.
// It goes before the ack of the same id: a device that knows parked keeps
// the entry and says so (the ack then does not delete it); an older device
// refuses the unknown command and deletes the entry on the ack, as before.
func parkedNotice(id, reason string) []byte {
	if len(reason) > protocol.MaxReasonBytes {
		cut := protocol.MaxReasonBytes - len("…")
		for cut > 0 && !utf8.RuneStart(reason[cut]) {
			cut--
		}
		reason = reason[:cut] + "…"
	}
	if reason == "" {
		reason = "parked"
	}
	b, _ := json.Marshal(map[string]any{"id": "parked-" + id, "type": protocol.CmdParked, "ids": []string{id}, "reason": reason})
	return b
}
