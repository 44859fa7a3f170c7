package protocol

import (
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/buffer"
)

func TestRenderUnstored(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 2, 12, 0, time.UTC)
	for _, tc := range []struct {
		name, device, id string
		wantErr          string
	}{
		{"ok", "inspector-7", "019c8a2e-6000-7000-8000-0000000000ab", ""},
		{"bad device", "a/b", "x", "device_id"},
		{"no id", "d", "", "empty id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic, payload, err := RenderUnstored(tc.device, tc.id, buffer.Record{Text: "Scheur in de balk", Lang: "nl", Source: "typed"}, at)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || topic != "agora/v1/inspector-7/utterances" {
				t.Fatalf("topic %q err %v", topic, err)
			}
			var u Utterance
			if err := strictUnmarshal(payload, &u); err != nil {
				t.Fatalf("strict decode %s: %v", payload, err)
			}
			if !u.Unstored || u.Seq != 0 || u.StoreID != "" || u.ID != tc.id || u.Text != "Scheur in de balk" || u.Type != TypeUtterance {
				t.Errorf("unstored utterance %s", payload)
			}
		})
	}
	// A stored entry's message says nothing of it (omitempty).
	_, payload, err := Render("d", buffer.Entry{ID: "e1", Seq: 3, Kind: buffer.KindUtterance, Body: []byte(`{"text":"x"}`)})
	if err != nil || strings.Contains(string(payload), "unstored") {
		t.Errorf("stored entry: %s %v", payload, err)
	}
}
