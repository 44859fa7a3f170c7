package ggml

import "testing"

func TestLoadBackendsFindsCPU(t *testing.T) {
	for i := 0; i < 2; i++ { // a second call must be a cheap no-op with the same answer
		if err := LoadBackends(); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if devices < 1 {
		t.Fatalf("devices = %d, want at least the CPU", devices)
	}
}
