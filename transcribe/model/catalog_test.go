package model

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/agora/agorad/audio/testaudio"
)

func TestCatalogEntriesWellFormed(t *testing.T) {
	hexSHA := regexp.MustCompile(`^[0-9a-f]{64}$`)
	seen := map[string]bool{}
	for _, e := range Catalog {
		if seen[e.Name] || seen[e.File] {
			t.Errorf("%s: duplicate name or file", e.Name)
		}
		seen[e.Name], seen[e.File] = true, true
		if !hexSHA.MatchString(e.SHA256) {
			t.Errorf("%s: sha256 %q is not 64 lowercase hex digits", e.Name, e.SHA256)
		}
		if !strings.HasPrefix(e.URL, "https://") || !strings.HasSuffix(e.URL, "/"+e.File) {
			t.Errorf("%s: url %q must be https and end in the file name", e.Name, e.URL)
		}
		if e.Kind != "whisper" && e.Kind != "vad" {
			t.Errorf("%s: kind %q", e.Name, e.Kind)
		}
	}
}

func TestLookupCatalog(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{"base.en", "ggml-base.en.bin", true},
		{"ggml-tiny.bin", "ggml-tiny.bin", true},
		{"silero-v6.2.0", "ggml-silero-v6.2.0.bin", true},
		{"base.nl", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		e, ok := Lookup(tt.in)
		if ok != tt.ok || e.File != tt.want {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", tt.in, e.File, ok, tt.want, tt.ok)
		}
	}
}

// The shared Silero model is the upstream file: its checksum must match the
// catalog, which proves the checksum path against a real artefact.
func TestCatalogMatchesSharedSilero(t *testing.T) {
	e, _ := Lookup("silero-v6.2.0")
	f, err := os.Open(testaudio.Model(t, "for-tests-silero-v6.2.0-ggml.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != e.SHA256 || n != e.Size {
		t.Fatalf("shared silero: sha256 %s size %d; catalog %s size %d", got, n, e.SHA256, e.Size)
	}
}

// The catalog's Silero model resolves to the byte-identical copy that
// whisper.cpp publishes under its test name.
func TestResolveCatalogAlias(t *testing.T) {
	shared := testaudio.SharedDir(t) + "/models"
	got, err := ResolveIn("vad", "silero-v6.2.0", shared)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(got, "/for-tests-silero-v6.2.0-ggml.bin") {
		t.Fatalf("resolved to %s", got)
	}
	if _, err := ResolveIn("whisper", "silero-v6.2.0", shared); err == nil {
		t.Fatal("a VAD catalog name resolved as a whisper model")
	}
}
