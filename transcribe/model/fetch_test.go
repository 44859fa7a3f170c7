package model

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// withCatalog adds entries to the catalog for one test.
func withCatalog(t *testing.T, entries ...CatalogEntry) {
	t.Helper()
	saved := Catalog
	Catalog = append(append([]CatalogEntry(nil), saved...), entries...)
	t.Cleanup(func() { Catalog = saved })
}

func TestFetch(t *testing.T) {
	body := []byte("lmgg pretend model bytes")
	sum := sha256.Sum256(body)
	good := hex.EncodeToString(sum[:])
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/model.bin" {
			w.Write(body)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	host := func(u string) string { p, _ := url.Parse(u); return p.Host }

	withCatalog(t,
		CatalogEntry{Name: "t-good", Kind: "whisper", File: "t-good.bin", URL: srv.URL + "/model.bin", SHA256: good, Size: int64(len(body))},
		CatalogEntry{Name: "t-badsum", Kind: "whisper", File: "t-badsum.bin", URL: srv.URL + "/model.bin", SHA256: strings.Repeat("ab", 32)},
		CatalogEntry{Name: "t-badsize", Kind: "whisper", File: "t-badsize.bin", URL: srv.URL + "/model.bin", SHA256: good, Size: 999},
		CatalogEntry{Name: "t-404", Kind: "whisper", File: "t-404.bin", URL: srv.URL + "/missing.bin", SHA256: good},
		CatalogEntry{Name: "t-down", Kind: "vad", File: "t-down.bin", URL: deadURL + "/model.bin", SHA256: good},
	)
	tests := []struct {
		name    string
		wantErr []string // all must appear; none means success
	}{
		{"t-good", nil},
		{"t-badsum", []string{"checksum mismatch", "expected sha256 " + strings.Repeat("ab", 32), "got " + good}},
		{"t-badsize", []string{"expected 999"}},
		{"t-404", []string{"404", host(srv.URL)}},
		{"t-down", []string{"cannot reach", host(deadURL)}},
		{"no-such-model", []string{`unknown model "no-such-model"`, "base.en", "t-good"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "models")
			path, err := Fetch(context.Background(), tc.name, dir, srv.Client())
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Fetch: %v", err)
				}
				got, err := os.ReadFile(path)
				if err != nil || string(got) != string(body) {
					t.Fatalf("fetched file %s = %q, %v; want the served bytes", path, got, err)
				}
				before := hits.Load()
				if again, err := Fetch(context.Background(), tc.name, dir, srv.Client()); err != nil || again != path || hits.Load() != before {
					t.Errorf("second Fetch = %s, %v, %d requests; want the verified file kept without downloading", again, err, hits.Load()-before)
				}
			} else {
				if err == nil {
					t.Fatalf("Fetch succeeded, want error with %q", tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
			}
			// Nothing half-written is ever left behind.
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), ".part") || (tc.wantErr != nil && e.Name() != "") {
					t.Errorf("left %s in %s", e.Name(), dir)
				}
			}
		})
	}
}

func TestFetchReplacesCorruptFile(t *testing.T) {
	body := []byte("the real model")
	sum := sha256.Sum256(body)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer srv.Close()
	withCatalog(t, CatalogEntry{Name: "t-fix", Kind: "whisper", File: "t-fix.bin", URL: srv.URL, SHA256: hex.EncodeToString(sum[:])})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "t-fix.bin"), []byte("half a mod"), 0o644); err != nil {
		t.Fatal(err)
	}
	path, err := Fetch(context.Background(), "t-fix", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != string(body) {
		t.Fatalf("file = %q, want the downloaded model", got)
	}
}

func TestResolveModel(t *testing.T) {
	root := t.TempDir()
	work := filepath.Join(root, "work")
	for _, d := range []string{filepath.Join(work, "models"), filepath.Join(root, "shared", "models")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	touch := func(p string) string {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	touch(filepath.Join(work, "models", "ggml-base.en.bin"))
	touch(filepath.Join(work, "models", "local.bin"))
	touch(filepath.Join(root, "shared", "models", "local.bin"))
	touch(filepath.Join(root, "shared", "models", "for-tests-silero-v6.2.0-ggml.bin"))
	configured := touch(filepath.Join(root, "configured.bin"))
	t.Chdir(work)

	tests := []struct {
		kind, name, configured string
		want                   string   // path on success
		wantErr                []string // parts of the error
	}{
		{"whisper", "base.en", "", filepath.Join("models", "ggml-base.en.bin"), nil},
		{"whisper", "ggml-base.en.bin", "", filepath.Join("models", "ggml-base.en.bin"), nil},
		{"whisper", "local.bin", "", filepath.Join("models", "local.bin"), nil}, // ./models wins over shared
		{"vad", "for-tests-silero-v6.2.0-ggml.bin", "", filepath.Join("..", "shared", "models", "for-tests-silero-v6.2.0-ggml.bin"), nil},
		{"whisper", "base.en", configured, configured, nil},
		{"whisper", "base.en", filepath.Join(root, "gone.bin"), "", []string{"whisper model", "gone.bin", "no such file"}},
		{"whisper", "small", "", "", []string{`whisper model "small" not found`, filepath.Join(work, "models", "ggml-small.bin"),
			filepath.Join(root, "shared", "models", "ggml-small.bin"), "agorad model fetch small"}},
		{"whisper", "mystery.bin", "", "", []string{`"mystery.bin" not found`, "not in the model catalog", "base.en", "agorad model fetch NAME"}},
		{"vad", "base.en", "", "", []string{"not in the model catalog", "silero-v6.2.0"}},
		{"whisper", "", "", "", []string{"neither a name nor a path"}},
		{"tts", "x", "", "", []string{`unknown kind "tts"`}},
		{"whisper", "x", filepath.Join(work, "models"), "", []string{"is a directory"}},
	}
	extra := filepath.Join(root, "state", "models")
	if err := os.MkdirAll(extra, 0o755); err != nil {
		t.Fatal(err)
	}
	touch(filepath.Join(extra, "ggml-base.en.bin"))
	if got, err := ResolveIn("whisper", "base.en", "", extra); err != nil || got != filepath.Join(extra, "ggml-base.en.bin") {
		t.Errorf("ResolveIn(state dir) = %q, %v; want the state dir's copy first", got, err)
	}
	if got, err := ResolveIn("whisper", "local.bin", extra); err != nil || got != filepath.Join("models", "local.bin") {
		t.Errorf("ResolveIn falls back to ./models: got %q, %v", got, err)
	}
	if _, err := ResolveIn("whisper", "small", extra); err == nil || !strings.Contains(err.Error(), filepath.Join(extra, "ggml-small.bin")) {
		t.Errorf("ResolveIn error %v does not list the extra dir", err)
	}
	for _, tc := range tests {
		got, err := Resolve(tc.kind, tc.name, tc.configured)
		if tc.wantErr == nil {
			if err != nil || got != tc.want {
				t.Errorf("Resolve(%s, %s, %s) = %q, %v; want %q", tc.kind, tc.name, tc.configured, got, err, tc.want)
			}
			continue
		}
		if err == nil {
			t.Errorf("Resolve(%s, %s, %s) = %q, want error", tc.kind, tc.name, tc.configured, got)
			continue
		}
		for _, w := range tc.wantErr {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Resolve(%s, %s, %s) error %q lacks %q", tc.kind, tc.name, tc.configured, err, w)
			}
		}
	}
}
