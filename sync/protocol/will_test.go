package protocol

import (
	"encoding/json"
	"testing"
	"time"
)

// The last will says who went offline and when, and nothing the broker
// would send stale: no mode, no counts.
func TestRenderWill(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 0, 3, 0, time.UTC)
	tests := []struct {
		name, device, storeID string
		wantErr               bool
	}{
		{"with store id", "handheld-07", "019c8a2e-0000-7000-8000-000000000001", false},
		{"without store id", "handheld-07", "", false},
		{"bad device id", "hand/held", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			topic, payload, err := RenderWill(tc.device, "will-1", tc.storeID, at)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if topic != Topic(tc.device, TopicStatus) {
				t.Errorf("topic %s", topic)
			}
			var got map[string]any
			if err := json.Unmarshal(payload, &got); err != nil {
				t.Fatal(err)
			}
			for _, absent := range []string{"mode", "buffered", "outbox", "version", "model"} {
				if _, ok := got[absent]; ok {
					t.Errorf("will carries %q: %s", absent, payload)
				}
			}
			want := map[string]any{"type": "status", "device_id": tc.device, "online": false, "offline": true,
				"updated_at": "2026-03-01T09:00:03.000Z", "id": "will-1"}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v: %s", k, got[k], v, payload)
				}
			}
			if sid, _ := got["store_id"].(string); sid != tc.storeID {
				t.Errorf("store_id %q, want %q", sid, tc.storeID)
			}
			// A reader of statuses decodes it as one, offline.
			var st StatusMessage
			if err := json.Unmarshal(payload, &st); err != nil || st.Online || st.Mode != "" {
				t.Errorf("as StatusMessage: %+v (%v)", st, err)
			}
		})
	}
}
