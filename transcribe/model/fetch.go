package model

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// Fetch downloads the catalog model name into dir (default "models") and
// returns its path. The file appears only complete and verified: it is
// written to a temporary file in dir, checked against the catalog's sha256
// (and size), then renamed into place. A file already there with the right
// checksum is kept without downloading. client nil means http.DefaultClient.
func Fetch(ctx context.Context, name, dir string, client *http.Client) (string, error) {
	e, ok := Lookup(name)
	if !ok {
		return "", fmt.Errorf("fetch model: unknown model %q; known models: %s", name, strings.Join(catalogNames(""), ", "))
	}
	if dir == "" {
		dir = "models"
	}
	if client == nil {
		client = http.DefaultClient
	}
	dest := filepath.Join(dir, e.File)
	if sum, err := fileSHA256(dest); err == nil && strings.EqualFold(sum, e.SHA256) {
		return dest, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("fetch model %s: create %s: %w", name, dir, err)
	}
	host := e.URL
	if u, err := url.Parse(e.URL); err == nil {
		host = u.Host
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.URL, nil)
	if err != nil {
		return "", fmt.Errorf("fetch model %s: bad catalog URL %q: %w", name, e.URL, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("fetch model %s: cannot reach %s: %w", name, host, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("fetch model %s: %s answered %s for %s", name, host, resp.Status, e.URL)
	}

	tmp, err := os.CreateTemp(dir, "."+e.File+".*.part")
	if err != nil {
		return "", fmt.Errorf("fetch model %s: %w", name, err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), resp.Body)
	if err != nil {
		return "", fmt.Errorf("fetch model %s: download from %s failed after %d bytes: %w", name, host, n, err)
	}
	if e.Size > 0 && n != e.Size {
		return "", fmt.Errorf("fetch model %s: got %d bytes from %s, expected %d", name, n, host, e.Size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, e.SHA256) {
		return "", fmt.Errorf("fetch model %s: checksum mismatch: expected sha256 %s, got %s (download discarded)", name, e.SHA256, got)
	}
	if err := tmp.Sync(); err != nil {
		return "", fmt.Errorf("fetch model %s: write %s: %w", name, tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("fetch model %s: write %s: %w", name, tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), dest); err != nil {
		return "", fmt.Errorf("fetch model %s: %w", name, err)
	}
	done = true
	syncDir(dir) // make the rename survive a power cut
	return dest, nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
