package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadVocabulary: the three files a CTranslate2 Whisper directory may
// carry give the same tokens in id order, and token strings become the
// bytes GPT-2's byte-level encoding stands for.
func TestReadVocabulary(t *testing.T) {
	want := []string{"a", "Ġthe", "Ċ", "Ã©", "<|endoftext|>"}
	files := map[string]string{
		"vocabulary.json": `["a", "Ġthe", "Ċ", "Ã©", "<|endoftext|>"]`,
		"vocabulary.txt":  "a\nĠthe\nĊ\nÃ©\n<|endoftext|>\n",
		"tokenizer.json": `{"model": {"type": "BPE", "vocab": {"Ġthe": 1, "a": 0, "Ã©": 3, "Ċ": 2}},
			"added_tokens": [{"id": 4, "content": "<|endoftext|>"}]}`,
	}
	for name, body := range files {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			got, from, err := readVocabulary(dir)
			if err != nil || filepath.Base(from) != name || strings.Join(got, "|") != strings.Join(want, "|") {
				t.Fatalf("readVocabulary = %q from %s, %v; want %q from %s", got, from, err, want, name)
			}
		})
	}
	bytesOf := map[string]string{"Ġthe": " the", "Ċ": "\n", "Ã©": "é", "a": "a"}
	for tok, w := range bytesOf {
		if b, ok := tokenBytes(tok); !ok || string(b) != w {
			t.Errorf("tokenBytes(%q) = %q, %v; want %q", tok, b, ok, w)
		}
	}
	if _, ok := tokenBytes("日本"); ok {
		t.Error("tokenBytes accepted characters outside GPT-2's byte alphabet")
	}
}
