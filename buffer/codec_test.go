package buffer

import (
	"encoding/binary"
	"strings"
	"testing"
)

func TestCodecRejectsGarbage(t *testing.T) {
	tests := []struct {
		name string
		v    []byte
	}{
		{"empty", nil},
		{"bad format", []byte{9, 1, '{'}},
		{"short header", append([]byte{entryFormat}, binary.AppendUvarint(nil, 100)...)},
	}
	for _, tt := range tests {
		if _, err := decodeEntry(tt.v); err == nil {
			t.Errorf("%s: decoded", tt.name)
		}
	}
	if _, err := decodeAudio("x", []byte("AJ\x01short")); err == nil || !strings.Contains(err.Error(), "x") {
		t.Errorf("bad audio: %v", err)
	}
}
