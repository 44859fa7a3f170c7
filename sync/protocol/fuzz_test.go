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
		default:
			t.Fatalf("accepted unknown type %q", cmd.Type)
		}
	})
}
