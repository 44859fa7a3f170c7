package protocol

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestDocExamples: every complete JSON example of docs/protocol.md is what
// the code reads: a device message decodes, field by field, into its type
// (no field the type does not have), and a command parses as the device
// parses it. Examples with elisions ("…") are shapes, not messages.
func TestDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for i, part := range strings.Split(string(doc), "```json\n") {
		if i > 0 {
			body, _, _ := strings.Cut(part, "```")
			blocks = append(blocks, body)
		}
	}
	checked := 0
	for _, b := range blocks {
		if strings.Contains(b, "…") {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(b))
		for dec.More() {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				t.Fatalf("docs/protocol.md: example is not JSON: %v\n%s", err, b)
			}
			checked++
			var head struct {
				V    int    `json:"v"`
				Type string `json:"type"`
			}
			json.Unmarshal(raw, &head)
			if head.V == 0 { // a command: no envelope
				if _, err := ParseCommand("handheld-07", raw); err != nil {
					t.Errorf("command example refused: %v\n%s", err, raw)
				}
				continue
			}
			var into any
			switch head.Type {
			case TypeUtterance:
				into = &Utterance{}
			case TypeBatch:
				into = &Batch{}
			case TypeStatus:
				into = &StatusMessage{}
			case TypeAck:
				into = &struct {
					Envelope
					AckBody
				}{}
			case TypeEvent:
				into = &struct {
					Envelope
					EventBody
				}{}
			default:
				t.Errorf("example of unknown type %q:\n%s", head.Type, raw)
				continue
			}
			d := json.NewDecoder(bytes.NewReader(raw))
			d.DisallowUnknownFields()
			if err := d.Decode(into); err != nil {
				t.Errorf("%s example does not decode into its type: %v\n%s", head.Type, err, raw)
			}
		}
	}
	if checked < 8 {
		t.Fatalf("only %d examples checked: the extraction is broken", checked)
	}
}
