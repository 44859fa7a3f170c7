package model

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// readVocabulary returns the model's tokens in id order, as CTranslate2
// numbers them: vocabulary.json (a JSON list) or vocabulary.txt (one token a
// line), which the converter writes; failing both, the Hugging Face
// tokenizer.json (model.vocab plus added_tokens). Tokens are GPT-2
// byte-level strings ("Ġthe"); the second result names the file used.
func readVocabulary(dir string) ([]string, string, error) {
	if p := filepath.Join(dir, "vocabulary.json"); exists(p) {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, p, fmt.Errorf("vocabulary %s: %w", p, err)
		}
		var toks []string
		if err := json.Unmarshal(b, &toks); err != nil {
			return nil, p, fmt.Errorf("vocabulary %s: not a JSON list of tokens: %w", p, err)
		}
		return toks, p, nil
	}
	if p := filepath.Join(dir, "vocabulary.txt"); exists(p) {
		f, err := os.Open(p)
		if err != nil {
			return nil, p, fmt.Errorf("vocabulary %s: %w", p, err)
		}
		defer f.Close()
		var toks []string
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 4096), 1<<20)
		for sc.Scan() {
			toks = append(toks, strings.TrimSuffix(sc.Text(), "\r"))
		}
		if err := sc.Err(); err != nil {
			return nil, p, fmt.Errorf("vocabulary %s: %w", p, err)
		}
		return toks, p, nil
	}
	p := filepath.Join(dir, "tokenizer.json")
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, dir, fmt.Errorf("vocabulary: %s has none of vocabulary.json, vocabulary.txt, tokenizer.json", dir)
	}
	if err != nil {
		return nil, p, fmt.Errorf("vocabulary %s: %w", p, err)
	}
	var tj struct {
		Model struct {
			Type  string         `json:"type"`
			Vocab map[string]int `json:"vocab"`
		} `json:"model"`
		Added []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
		} `json:"added_tokens"`
	}
	if err := json.Unmarshal(b, &tj); err != nil {
		return nil, p, fmt.Errorf("vocabulary %s: not a tokenizer.json: %w", p, err)
	}
	if tj.Model.Type != "BPE" || len(tj.Model.Vocab) == 0 {
		return nil, p, fmt.Errorf("vocabulary %s: model type %q with %d tokens, want Whisper's byte-level BPE", p, tj.Model.Type, len(tj.Model.Vocab))
	}
	byID := map[int]string{}
	for tok, id := range tj.Model.Vocab {
		byID[id] = tok
	}
	for _, a := range tj.Added {
		byID[a.ID] = a.Content
	}
	ids := make([]int, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	toks := make([]string, len(ids))
	for i, id := range ids {
		if id != i {
			return nil, p, fmt.Errorf("vocabulary %s: token id %d is missing", p, i)
		}
		toks[i] = byID[id]
	}
	return toks, p, nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// byteDecoder inverts GPT-2's bytes_to_unicode: the printable Latin-1 bytes
// stand for themselves, the other 68 bytes for U+0100 upwards in order.
var byteDecoder = func() map[rune]byte {
	m := make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m[rune(b)] = byte(b)
		} else {
			m[rune(256+n)] = byte(b)
			n++
		}
	}
	return m
}()

// tokenBytes turns a byte-level BPE token into the bytes it stands for,
// which is what a ggml whisper vocabulary holds.
func tokenBytes(tok string) ([]byte, bool) {
	out := make([]byte, 0, len(tok))
	for _, r := range tok {
		b, ok := byteDecoder[r]
		if !ok {
			return nil, false
		}
		out = append(out, b)
	}
	return out, true
}
