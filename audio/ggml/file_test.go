package ggml

import (
	"strings"
	"testing"

	"github.com/agora/agorad/audio/testaudio"
)

// TestCheckKinds: each checker accepts its own kind of file and rejects
// the other with an error naming the file.
func TestCheckKinds(t *testing.T) {
	whisper := testaudio.Model(t, "for-tests-ggml-tiny.en.bin")
	silero := testaudio.Model(t, "for-tests-silero-v6.2.0-ggml.bin")
	tests := []struct {
		name, path string
		check      func(string) error
		want       string // "" for success
	}{
		{"whisper as whisper", whisper, func(p string) error { _, err := CheckWhisper(p); return err }, ""},
		{"silero as silero", silero, func(p string) error { _, err := CheckSilero(p); return err }, ""},
		{"silero as whisper", silero, func(p string) error { _, err := CheckWhisper(p); return err }, "not a whisper model"},
		{"whisper as silero", whisper, func(p string) error { _, err := CheckSilero(p); return err }, "not a valid Silero VAD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.check(tt.path)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.path)):
				t.Fatalf("error %v, want one naming %s and saying %q", err, tt.path, tt.want)
			}
		})
	}
	h, err := CheckWhisper(whisper)
	if err != nil || h.NVocab != 51864 || h.NMels != 80 {
		t.Errorf("tiny.en header %+v, %v", h, err)
	}
	info, err := CheckSilero(silero)
	if err != nil || info.WindowSize != 512 || info.Tensors == 0 {
		t.Errorf("silero info %+v, %v", info, err)
	}
}
