package protocol

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/buffer"
)

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTopicAndDeviceID(t *testing.T) {
	if got := Topic("dev-1", TopicUtterances); got != "agora/v1/dev-1/utterances" {
		t.Fatalf("Topic = %q", got)
	}
	for _, bad := range []string{"", "a/b", "a+b", "a#", "$sys", "a b", strings.Repeat("x", 65)} {
		if err := ValidateDeviceID(bad); err == nil {
			t.Errorf("ValidateDeviceID(%q) accepted", bad)
		}
	}
	if err := ValidateDeviceID("handheld-07_A.1"); err != nil {
		t.Errorf("valid id refused: %v", err)
	}
}

func TestRenderUtterance(t *testing.T) {
	created := time.Date(2026, 3, 1, 10, 0, 0, 123456789, time.FixedZone("CET", 3600))
	started := created.Add(-2 * time.Second)
	rec := buffer.Record{ID: "rec-1", Seq: 7, Text: "crack in the weld", Lang: "en", Confidence: 0.91,
		StartedAt: started, DurationMS: 1800, Source: "mic", Offline: true, CreatedAt: created}
	e := buffer.Entry{ID: "rec-1", Seq: 7, Lane: buffer.LaneData, Kind: buffer.KindUtterance,
		CreatedAt: created, Offline: true, Body: mustJSON(t, rec)}
	topic, payload, err := Render("dev-1", e)
	if err != nil {
		t.Fatal(err)
	}
	if topic != "agora/v1/dev-1/utterances" {
		t.Errorf("topic %q", topic)
	}
	var m map[string]any
	if err := json.Unmarshal(payload, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"v": 1.0, "type": "utterance", "id": "rec-1", "seq": 7.0, "device_id": "dev-1",
		"created_at": "2026-03-01T09:00:00.123Z", "offline": true, "text": "crack in the weld", "lang": "en",
		"confidence": 0.91, "started_at": "2026-03-01T08:59:58.123Z", "duration_ms": 1800.0, "source": "mic"}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %#v, want %#v", k, m[k], v)
		}
	}
	if _, ok := m["record_id"]; ok {
		t.Errorf("record_id present although it equals id")
	}
}

func TestRenderBatch(t *testing.T) {
	var recs []buffer.Record
	for i := range 3 {
		recs = append(recs, buffer.Record{ID: string(rune('a' + i)), Seq: uint64(10 + i), Text: strings.Repeat("x", i+1)})
	}
	e := buffer.Entry{ID: "batch-1", Seq: 13, Kind: buffer.KindBatch, CreatedAt: time.Now(),
		Body: mustJSON(t, buffer.BatchBody{Items: recs, Count: 3})}
	topic, payload, err := Render("d", e)
	if err != nil {
		t.Fatal(err)
	}
	if topic != "agora/v1/d/batches" {
		t.Errorf("topic %q", topic)
	}
	var b Batch
	if err := json.Unmarshal(payload, &b); err != nil {
		t.Fatal(err)
	}
	if b.Type != TypeBatch || b.ID != "batch-1" || b.Seq != 13 || b.Count != 3 || len(b.Items) != 3 ||
		!b.Context.IsOfflineBatch || b.Context.MessageCount != 3 {
		t.Fatalf("batch = %+v", b)
	}
	for i, it := range b.Items {
		if it.ID != recs[i].ID || it.Seq != recs[i].Seq || it.Text != recs[i].Text {
			t.Errorf("item %d = %+v, want record %+v", i, it, recs[i])
		}
	}
	if !strings.Contains(string(payload), `"context":{"isOfflineBatch":true,"messageCount":3}`) {
		t.Errorf("context not in web-client form: %s", payload)
	}
}

func TestRenderAckEventStatus(t *testing.T) {
	ack := buffer.Entry{ID: "a1", Seq: 3, Lane: buffer.LaneControl, Kind: buffer.KindAck, CreatedAt: time.Now(),
		Body: mustJSON(t, AckBody{CommandID: "c1", CommandType: CmdSetMode, OK: true, Mode: "listen"})}
	topic, payload, err := Render("d", ack)
	if err != nil || topic != "agora/v1/d/acks" {
		t.Fatalf("ack: %q %v", topic, err)
	}
	var m map[string]any
	_ = json.Unmarshal(payload, &m)
	if m["type"] != "ack" || m["command_id"] != "c1" || m["ok"] != true || m["mode"] != "listen" || m["id"] != "a1" {
		t.Errorf("ack payload %s", payload)
	}
	ev := buffer.Entry{ID: "e1", Seq: 4, Kind: buffer.KindEvent, Body: mustJSON(t, EventBody{Event: "storage_full", Detail: map[string]any{"refused": 2}})}
	topic, payload, err = Render("d", ev)
	if err != nil || topic != "agora/v1/d/events" || !strings.Contains(string(payload), `"event":"storage_full"`) {
		t.Fatalf("event: %q %s %v", topic, payload, err)
	}
	topic, payload, err = RenderStatus("d", "s1", Status{Mode: "listen", Buffered: 2, Outbox: 5, Online: false, Version: "1.0", Model: "base"})
	if err != nil || topic != "agora/v1/d/status" {
		t.Fatalf("status: %q %v", topic, err)
	}
	var s StatusMessage
	_ = json.Unmarshal(payload, &s)
	if s.Type != "status" || s.Online || !s.Offline || s.Mode != "listen" || s.Buffered != 2 || s.Outbox != 5 || s.UpdatedAt == "" {
		t.Errorf("status %s", payload)
	}
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name, device, wantIn string
		e                    buffer.Entry
	}{
		{"bad device", "a/b", "device_id", buffer.Entry{ID: "x", Kind: buffer.KindUtterance, Body: []byte(`{}`)}},
		{"no id", "d", "empty id", buffer.Entry{Kind: buffer.KindUtterance, Body: []byte(`{}`)}},
		{"unknown kind", "d", `unknown kind "blob"`, buffer.Entry{ID: "x", Kind: "blob"}},
		{"bad utterance body", "d", "utterance entry x", buffer.Entry{ID: "x", Kind: buffer.KindUtterance, Body: []byte(`{`)}},
		{"batch count mismatch", "d", "count 2 but 0 items", buffer.Entry{ID: "x", Kind: buffer.KindBatch, Body: []byte(`{"items":[],"count":2}`)}},
		{"ack unknown field", "d", "ack entry x", buffer.Entry{ID: "x", Kind: buffer.KindAck, Body: []byte(`{"zz":1}`)}},
		{"event without name", "d", "empty event name", buffer.Entry{ID: "x", Kind: buffer.KindEvent, Body: []byte(`{}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Render(tt.device, tt.e)
			if err == nil || !strings.Contains(err.Error(), tt.wantIn) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.wantIn)
			}
		})
	}
	e := buffer.Entry{ID: "x", Seq: 9, Kind: "blob", Body: []byte{0xff, 0}}
	topic, payload, err := RenderDeadLetter("d", e, "unknown kind")
	if err != nil || topic != "agora/v1/d/events" || !strings.Contains(string(payload), `"body_base64":"/wA="`) {
		t.Fatalf("dead letter: %q %s %v", topic, payload, err)
	}
}

func TestParseCommand(t *testing.T) {
	tests := []struct {
		name      string
		payload   string
		want      Command
		wantField string // "" = valid
	}{
		{"set_mode listen", `{"id":"c1","type":"set_mode","mode":"listen"}`, Command{ID: "c1", Type: CmdSetMode, Mode: "listen"}, ""},
		{"set_mode feedback with v and device", `{"v":1,"device_id":"dev","id":"c2","type":"set_mode","mode":"feedback"}`, Command{ID: "c2", Type: CmdSetMode, Mode: "feedback"}, ""},
		{"ping", `{"id":"p","type":"ping"}`, Command{ID: "p", Type: CmdPing}, ""},
		{"ack", `{"id":"a","type":"ack","ids":["x","y"]}`, Command{ID: "a", Type: CmdAck, IDs: []string{"x", "y"}}, ""},
		{"bad json", `{"id":`, Command{}, "id"},
		{"empty key", `{"":1}`, Command{}, "payload"},
		{"not object", `["id"]`, Command{}, "payload"},
		{"trailing", `{"id":"p","type":"ping"} {}`, Command{}, "payload"},
		{"trailing garbage", `{"id":"tr","type":"ping"} trailing`, Command{}, "payload"},
		{"trailing bracket", `{"id":"tr","type":"ping"}}`, Command{}, "payload"},
		{"trailing number", `{"id":"tr","type":"ping"}1`, Command{}, "payload"},
		{"trailing whitespace ok", "{\"id\":\"p\",\"type\":\"ping\"} \n\t", Command{ID: "p", Type: CmdPing}, ""},
		{"empty", ``, Command{}, "payload"},
		{"missing id", `{"type":"ping"}`, Command{}, "id"},
		{"empty id", `{"id":"","type":"ping"}`, Command{}, "id"},
		{"id number", `{"id":5,"type":"ping"}`, Command{}, "id"},
		{"id with space", `{"id":"a b","type":"ping"}`, Command{}, "id"},
		{"missing type", `{"id":"x"}`, Command{}, "type"},
		{"unknown type", `{"id":"x","type":"reboot"}`, Command{}, "type"},
		{"unknown field", `{"id":"x","type":"ping","extra":1}`, Command{}, "extra"},
		{"mode on ping", `{"id":"x","type":"ping","mode":"listen"}`, Command{}, "mode"},
		{"duplicate field", `{"id":"x","id":"y","type":"ping"}`, Command{}, "id"},
		{"bad mode", `{"id":"x","type":"set_mode","mode":"sleep"}`, Command{}, "mode"},
		{"mode wrong type", `{"id":"x","type":"set_mode","mode":true}`, Command{}, "mode"},
		{"missing mode", `{"id":"x","type":"set_mode"}`, Command{}, "mode"},
		{"ids not array", `{"id":"x","type":"ack","ids":"a"}`, Command{}, "ids"},
		{"ids null", `{"id":"x","type":"ack","ids":null}`, Command{}, "ids"},
		{"ids empty", `{"id":"x","type":"ack","ids":[]}`, Command{}, "ids"},
		{"ids element empty", `{"id":"x","type":"ack","ids":["a",""]}`, Command{}, "ids[1]"},
		{"parked", `{"id":"p","type":"parked","ids":["x"],"reason":"graph: rejected"}`, Command{ID: "p", Type: CmdParked, IDs: []string{"x"}, Reason: "graph: rejected"}, ""},
		{"parked without reason", `{"id":"p","type":"parked","ids":["x"]}`, Command{}, "reason"},
		{"parked blank reason", `{"id":"p","type":"parked","ids":["x"],"reason":" "}`, Command{}, "reason"},
		{"parked reason too long", `{"id":"p","type":"parked","ids":["x"],"reason":"` + strings.Repeat("r", MaxReasonBytes+1) + `"}`, Command{}, "reason"},
		{"parked without ids", `{"id":"p","type":"parked","reason":"r"}`, Command{}, "ids"},
		{"reason on an ack", `{"id":"a","type":"ack","ids":["x"],"reason":"r"}`, Command{}, "reason"},
		{"wrong version", `{"v":2,"id":"x","type":"ping"}`, Command{}, "v"},
		{"other device", `{"device_id":"other","id":"x","type":"ping"}`, Command{}, "device_id"},
		{"invalid utf8", "{\"id\":\"\xff\",\"type\":\"ping\"}", Command{}, "payload"},
		{"huge", `{"id":"x","type":"ping","pad":"` + strings.Repeat("a", MaxCommandBytes) + `"}`, Command{}, "payload"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCommand("dev", []byte(tt.payload))
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				if got.ID != tt.want.ID || got.Type != tt.want.Type || got.Mode != tt.want.Mode || got.Reason != tt.want.Reason || strings.Join(got.IDs, ",") != strings.Join(tt.want.IDs, ",") {
					t.Fatalf("got %+v, want %+v", got, tt.want)
				}
				return
			}
			var ce *CommandError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v (%T), want *CommandError", err, err)
			}
			if ce.Field != tt.wantField {
				t.Fatalf("field = %q (%v), want %q", ce.Field, err, tt.wantField)
			}
		})
	}
}
