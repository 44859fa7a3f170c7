package protocol

import (
	"errors"
	"testing"
)

func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{
		`{"id":"c1","type":"set_mode","mode":"listen"}`,
		`{"id":"a","type":"ack","ids":["x","y"]}`,
		`{"id":"p","type":"ping"}`,
		`{"v":1,"device_id":"dev","id":"p","type":"ping"}`,
		`{"id":"x","id":"y"}`,
		`{"id":1e999}`,
		`[{}]`, `null`, `"x"`, ``, "{\"id\":\"\xff\"}",
		`{"id":"a","type":"ack","ids":[1,2]}`,
		`{"id":"r1","type":"reply","in_reply_to":"u1","text":"Ja.","lang":"nl","urgent":true,"expires_at":"2026-03-01T09:00:00Z"}`,
		`{"id":"r2","type":"reply","text":"a <b>c</b>\u0007","spoken":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		cmd, err := ParseCommand("dev", payload)
		if err != nil {
			var ce *CommandError
			if !errors.As(err, &ce) || ce.Field == "" {
				t.Fatalf("error %v is not a *CommandError naming a field", err)
			}
			return
		}
		// Whatever is accepted must satisfy the schema.
		if cmd.ID == "" || len(payload) > MaxCommandBytes {
			t.Fatalf("accepted invalid command %+v", cmd)
		}
		switch cmd.Type {
		case CmdSetMode:
			if !cmd.Mode.Valid() {
				t.Fatalf("accepted bad mode %q", cmd.Mode)
			}
		case CmdAck:
			if len(cmd.IDs) == 0 {
				t.Fatalf("accepted ack without ids")
			}
		case CmdPing:
		case CmdReply:
			r := cmd.Reply
			if r == nil || r.ID != cmd.ID || r.Text == "" || len(r.Text) > MaxReplyTextBytes || (r.Lang != "" && r.Lang != "nl" && r.Lang != "en") {
				t.Fatalf("accepted bad reply %+v", r)
			}
		default:
			t.Fatalf("accepted unknown type %q", cmd.Type)
		}
	})
}
