package bridge

import (
	"strings"

	"github.com/agora/agorad/sync/agui"
	"github.com/agora/agorad/sync/protocol"
)

// answered reports whether the run produced an answer for the device: the
// graph's "answered" flag in the last state snapshot when it has one (the
// reference graph: false for notes it only buffered), else every utterance
// is answered and a batch (listen-mode notes) is not.
func answered(res agui.Result, typ string) bool {
	if a, ok := res.State["answered"].(bool); ok {
		return a
	}
	return typ == protocol.TypeUtterance
}

// reply builds the reply command from the run's last state snapshot
// (final_written / final_spoken), falling back to the streamed text.
func (b *Bridge) reply(env protocol.Envelope, res agui.Result, lang string) *protocol.ReplyCommand {
	text := res.StateString("final_written")
	if text == "" {
		text = res.Text
	}
	if strings.TrimSpace(text) == "" {
		b.log.Warn("run finished without an answer; no reply", "id", env.ID, "device", env.DeviceID)
		return nil
	}
	r := &protocol.ReplyCommand{ID: "reply-" + env.ID, Type: protocol.CmdReply, InReplyTo: env.ID, Text: text, Lang: lang}
	if s := res.StateString("final_spoken"); s != "" && s != text {
		r.Spoken = s
	}
	if l := res.StateString("lang"); l == "nl" || l == "en" {
		r.Lang = l
	}
	return r
}
