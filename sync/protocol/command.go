package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agora/agorad/buffer"
)

// Command types accepted on the commands topic.
const (
	CmdSetMode = "set_mode" // {"id","type":"set_mode","mode":"listen"|"feedback"}
	CmdAck     = "ack"      // {"id","type":"ack","ids":[...]}: backend confirms batch/message ids
	CmdPing    = "ping"     // {"id","type":"ping"}
	// CmdParked: {"id","type":"parked","ids":[...],"reason"}: the backend
	// refused these ids (parked them as dead letters with their content);
	// the device keeps them and says so. An ack of the same ids follows
	// (for devices that do not know parked), which does not delete them.
	CmdParked = "parked"
)

// Limits on inbound commands.
const (
	MaxCommandBytes = 16 << 10 // whole payload
	MaxIDLen        = 128      // id and each of ids
	MaxAckIDs       = 1024     // entries in ids
	MaxReasonBytes  = 1024     // reason of a parked command
)

// Command is a validated inbound command.
type Command struct {
	ID   string
	Type string
	Mode buffer.Mode // set_mode only
	IDs  []string    // ack and parked
	// Reason is why the backend parked IDs (parked only).
	Reason string
	// Reply is the validated reply (reply only): text and in_reply_to
	// checked, lang "nl", "en" or "", ExpiresAt parsed (zero: not given).
	Reply *Reply
}

// CommandError says which field of a command was wrong and why.
type CommandError struct {
	Field  string // JSON field name, or "payload" for the whole message
	Reason string
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("command field %q: %s", e.Field, e.Reason)
}

func cmdErr(field, format string, args ...any) error {
	return &CommandError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// fields allowed per command type, besides "id", "type", "v" and "device_id".
var commandFields = map[string]map[string]bool{
	CmdSetMode: {"mode": true},
	CmdAck:     {"ids": true},
	CmdParked:  {"ids": true, "reason": true},
	CmdPing:    {},
	CmdReply:   {"in_reply_to": true, "text": true, "spoken": true, "lang": true, "urgent": true, "expires_at": true},
}

// ParseCommand strictly validates one inbound command payload for deviceID.
// Anything unexpected (unknown or duplicate field, wrong type, missing id,
// oversize payload, invalid UTF-8, unknown type or mode, a device_id for
// another device) is an error of type *CommandError naming the field.
func ParseCommand(deviceID string, payload []byte) (Command, error) {
	if len(payload) > MaxCommandBytes {
		return Command{}, cmdErr("payload", "%d bytes, larger than %d", len(payload), MaxCommandBytes)
	}
	if !utf8.Valid(payload) {
		return Command{}, cmdErr("payload", "not valid UTF-8")
	}
	fields, order, err := decodeObject(payload)
	if err != nil {
		return Command{}, err
	}
	var cmd Command
	if cmd.ID, err = stringField(fields, "id", true); err != nil {
		return Command{}, err
	}
	if err := checkID("id", cmd.ID); err != nil {
		return Command{}, err
	}
	if cmd.Type, err = stringField(fields, "type", true); err != nil {
		return Command{}, err
	}
	allowed, ok := commandFields[cmd.Type]
	if !ok {
		return Command{}, cmdErr("type", "unknown command type %q (want set_mode, ack, parked, ping or reply)", cmd.Type)
	}
	for _, name := range order {
		switch {
		case name == "id" || name == "type" || allowed[name]:
		case name == "v":
			var v int
			if err := json.Unmarshal(fields[name], &v); err != nil || v != Version {
				return Command{}, cmdErr("v", "unsupported protocol version %s (want %d)", excerpt(fields[name]), Version)
			}
		case name == "device_id":
			d, err := stringField(fields, "device_id", false)
			if err != nil {
				return Command{}, err
			}
			if d != deviceID {
				return Command{}, cmdErr("device_id", "%q is not this device (%q)", d, deviceID)
			}
		default:
			return Command{}, cmdErr(name, "unknown field for %s command", cmd.Type)
		}
	}
	switch cmd.Type {
	case CmdSetMode:
		mode, err := stringField(fields, "mode", true)
		if err != nil {
			return Command{}, err
		}
		if cmd.Mode, err = buffer.ParseMode(mode); err != nil {
			return Command{}, cmdErr("mode", "%v", err)
		}
	case CmdAck, CmdParked:
		if cmd.Type == CmdParked {
			if cmd.Reason, err = stringField(fields, "reason", true); err != nil {
				return Command{}, err
			}
			if strings.TrimSpace(cmd.Reason) == "" || len(cmd.Reason) > MaxReasonBytes {
				return Command{}, cmdErr("reason", "%d bytes, want 1..%d, not blank", len(cmd.Reason), MaxReasonBytes)
			}
		}
		raw, ok := fields["ids"]
		if !ok {
			return Command{}, cmdErr("ids", "missing")
		}
		if err := json.Unmarshal(raw, &cmd.IDs); err != nil || cmd.IDs == nil {
			return Command{}, cmdErr("ids", "must be an array of strings")
		}
		if len(cmd.IDs) == 0 || len(cmd.IDs) > MaxAckIDs {
			return Command{}, cmdErr("ids", "%d ids, want 1..%d", len(cmd.IDs), MaxAckIDs)
		}
		for i, id := range cmd.IDs {
			if err := checkID(fmt.Sprintf("ids[%d]", i), id); err != nil {
				return Command{}, err
			}
		}
	case CmdReply:
		r, err := parseReply(fields)
		if err != nil {
			return Command{}, err
		}
		r.ID = cmd.ID
		cmd.Reply = &r
	}
	return cmd, nil
}

// decodeObject reads a single JSON object into raw fields, rejecting
// duplicate keys and trailing data (encoding/json would silently keep the
// last duplicate).
func decodeObject(payload []byte) (map[string]json.RawMessage, []string, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, cmdErr("payload", "not JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, cmdErr("payload", "not a JSON object")
	}
	fields := map[string]json.RawMessage{}
	var order []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, cmdErr("payload", "not JSON: %v", err)
		}
		name, ok := tok.(string)
		if !ok {
			return nil, nil, cmdErr("payload", "not JSON: object key is not a string")
		}
		if name == "" {
			return nil, nil, cmdErr("payload", "empty object key")
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, cmdErr(name, "not JSON: %v", err)
		}
		if _, dup := fields[name]; dup {
			return nil, nil, cmdErr(name, "duplicate field")
		}
		fields[name] = raw
		order = append(order, name)
	}
	if _, err := dec.Token(); err != nil { // closing '}'
		return nil, nil, cmdErr("payload", "not JSON: %v", err)
	}
	// Whatever follows the object must be whitespace only: dec.Token would
	// report invalid trailing bytes ("} trailing") as an error and so miss them.
	if rest := bytes.TrimLeft(payload[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return nil, nil, cmdErr("payload", "trailing data after the JSON object: %s", excerpt(rest))
	}
	return fields, order, nil
}

func stringField(fields map[string]json.RawMessage, name string, required bool) (string, error) {
	raw, ok := fields[name]
	if !ok {
		if required {
			return "", cmdErr(name, "missing")
		}
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", cmdErr(name, "must be a string, got %s", excerpt(raw))
	}
	return s, nil
}

func checkID(field, id string) error {
	if id == "" {
		return cmdErr(field, "empty")
	}
	if len(id) > MaxIDLen {
		return cmdErr(field, "longer than %d bytes", MaxIDLen)
	}
	if strings.IndexFunc(id, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }) >= 0 {
		return cmdErr(field, "contains whitespace or control characters")
	}
	return nil
}

// Excerpt returns a bounded, quoted form of untrusted bytes for logs.
func Excerpt(b []byte) string { return excerpt(b) }

func excerpt(b []byte) string {
	const max = 64
	if len(b) > max {
		return fmt.Sprintf("%q…(%d bytes)", b[:max], len(b))
	}
	return fmt.Sprintf("%q", b)
}
