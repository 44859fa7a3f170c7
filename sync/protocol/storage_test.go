package protocol

import (
	"encoding/json"
	"strings"
	"testing"
)

// The storage health is in a live status only while the storage is failed
// or recovering, and reads back through the strict decoding readers use.
func TestStatusStorage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		storage *StorageHealth
	}{
		{"ok: absent", nil},
		{"failed read-only", &StorageHealth{State: "failed", Kind: "read_only", Since: "2026-03-01T10:02:11.000Z", Episode: 1,
			Error: "append to listen buffer: read-only file system"}},
		{"recovering", &StorageHealth{State: "recovering", Kind: "full", Since: "2026-03-01T10:02:11.000Z", Episode: 2, Error: "disk full"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, payload, err := RenderStatus("d", "s1", Status{Mode: "listen", Online: true, Storage: tc.storage})
			if err != nil {
				t.Fatal(err)
			}
			if has := strings.Contains(string(payload), `"storage"`); has != (tc.storage != nil) {
				t.Fatalf("storage in %s: %v, want %v", payload, has, tc.storage != nil)
			}
			var s StatusMessage
			if err := strictUnmarshal(payload, &s); err != nil {
				t.Fatalf("strict decode of %s: %v", payload, err)
			}
			got, _ := json.Marshal(s.Storage)
			want, _ := json.Marshal(tc.storage)
			if string(got) != string(want) {
				t.Errorf("storage read back %s, want %s", got, want)
			}
		})
	}
}
