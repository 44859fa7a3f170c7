package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agora/agorad/transcribe/model"
)

func TestModelFetch(t *testing.T) {
	body := []byte("lmgg model bytes")
	sum := sha256.Sum256(body)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/m.bin" {
			http.NotFound(w, r)
			return
		}
		w.Write(body)
	}))
	defer srv.Close()
	saved := model.Catalog
	model.Catalog = append(append([]model.CatalogEntry(nil), saved...),
		model.CatalogEntry{Name: "t-ok", Kind: "whisper", File: "t-ok.bin", URL: srv.URL + "/m.bin", SHA256: hex.EncodeToString(sum[:])},
		model.CatalogEntry{Name: "t-gone", Kind: "whisper", File: "t-gone.bin", URL: srv.URL + "/gone.bin", SHA256: hex.EncodeToString(sum[:])},
	)
	t.Cleanup(func() { model.Catalog = saved })

	dir := t.TempDir()
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"t-ok", "--dir", dir}, exitOK, filepath.Join(dir, "t-ok.bin"), "fetching t-ok.bin"},
		{[]string{"--dir", dir, "t-ok"}, exitOK, filepath.Join(dir, "t-ok.bin"), ""},
		{[]string{"t-gone", "--dir", dir}, exitFailed, "", "404"},
		{[]string{"nonsense", "--dir", dir}, exitUsage, "", `unknown model "nonsense"`},
		{[]string{"--dir", dir}, exitUsage, "", "exactly one model NAME"},
		{[]string{"t-ok", "t-gone"}, exitUsage, "", "exactly one model NAME"},
	}
	for _, tc := range tests {
		var out, errOut bytes.Buffer
		code := cmdModelFetch(context.Background(), tc.args, &out, &errOut, srv.Client())
		if code != tc.code || !strings.Contains(out.String(), tc.stdout) || !strings.Contains(errOut.String(), tc.stderr) {
			t.Errorf("model fetch %q: exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.args, code, out.String(), errOut.String(), tc.code, tc.stdout, tc.stderr)
		}
	}
	if got, err := os.ReadFile(filepath.Join(dir, "t-ok.bin")); err != nil || !bytes.Equal(got, body) {
		t.Errorf("fetched file = %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "t-gone.bin")); err == nil {
		t.Errorf("a failed fetch left a model file")
	}
}

// TestModelImportCommand: the command's exit codes and output; what the
// import itself does is tested in transcribe/model.
func TestModelImportCommand(t *testing.T) {
	dir := t.TempDir()
	notModel := filepath.Join(dir, "notmodel")
	if err := os.MkdirAll(notModel, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(notModel, "model.bin"), []byte("not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{filepath.Join(dir, "nope")}, exitFailed, filepath.Join(dir, "nope")},
		{[]string{notModel, "--out", filepath.Join(dir, "x.bin")}, exitFailed, filepath.Join(notModel, "model.bin")},
		{[]string{notModel, "--type", "q3"}, exitFailed, `unknown type "q3"`},
		{nil, exitUsage, "exactly one CTranslate2 model directory"},
		{[]string{"a", "b"}, exitUsage, "exactly one CTranslate2 model directory"},
		{[]string{"--bogus"}, exitUsage, "flag provided but not defined"},
	}
	for _, tc := range tests {
		var out, errOut bytes.Buffer
		code := cmdModel(context.Background(), append([]string{"import"}, tc.args...), &out, &errOut)
		if code != tc.code || !strings.Contains(errOut.String(), tc.stderr) {
			t.Errorf("model import %q: exit %d, stderr %q; want %d, %q", tc.args, code, errOut.String(), tc.code, tc.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.bin")); err == nil {
		t.Error("a failed import left its output")
	}
}
