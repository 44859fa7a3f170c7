package buffer

import (
	"strings"
	"testing"
	"time"
)

// TestJournalTakesTheLongestUtterance: the longest utterance the
// configuration allows (30 s: segment.max_utterance and
// input.ptt.max_utterance are capped there, and a longer push-to-talk press
// is cut into pieces) is journaled under the smallest byte cap the
// configuration allows (16 MiB), so audio the inspector has spoken is never
// refused for its size; only a value beyond Badger's value-log file size is,
// with an error that says so.
func TestJournalTakesTheLongestUtterance(t *testing.T) {
	cases := []struct {
		name    string
		seconds int
		wantErr string
	}{
		{"longest utterance", 30, ""},
		{"beyond the value-log file size", 600, "exceed the value-log file size"},
	}
	s := openT(t, "", Options{MaxBytes: 16 << 20})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			samples := make([]float32, tc.seconds*16000)
			for i := range samples {
				samples[i] = float32(i%200-100) / 400
			}
			id, err := s.JournalAudio(samples, time.Now())
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("journal %d s: %v", tc.seconds, err)
				}
				a, err := s.Audio(id)
				if err != nil || len(a.Samples) != len(samples) {
					t.Fatalf("read back %d s: %d samples, err %v", tc.seconds, len(a.Samples), err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("journal %d s: err %v, want one containing %q", tc.seconds, err, tc.wantErr)
			}
		})
	}
}
