package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/brokertest"
)

// runOnce runs the agorad command line in this process.
func runOnce(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = dispatch(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestStoreDamageEndToEnd runs the daemon, damages its store the way a bad
// disk would, and walks the path an operator takes: agorad run refuses with
// exit 4 naming the damage and the commands; agorad store check reports it
// (exit 1); agorad store salvage copies everything into a new store; put in
// place, the daemon starts with every note and a new store_id.
func TestStoreDamageEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: agoractl build, real Badger files")
	}
	broker := brokertest.Start(t)
	broker.Stop() // offline device: everything stays in the store
	cfg := baseConfig(t, broker.URL())
	path := writeConfig(t, cfg)
	d := startDaemon(t, path, cfg.Control.Socket)
	for _, s := range []string{"crack in the weld", "roest op de balk", "loose railing"} {
		if out, code := agoractl(t, d.socket, "say", s); code != 0 {
			t.Fatalf("say: %d %s", code, out)
		}
	}
	if code := d.stop(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
	store := filepath.Join(cfg.StateDir, "store")

	code, out, errs := runOnce(t, "store", "check", "-c", path)
	if code != exitOK || !strings.Contains(out, "intact") || !strings.Contains(out, "3 listen") {
		t.Fatalf("check of an intact store: exit %d\n%s%s", code, out, errs)
	}

	if err := os.Remove(filepath.Join(store, "MANIFEST")); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runOnce(t, "run", "-c", path)
	if code != exitStore || !strings.Contains(errs, "MANIFEST") || !strings.Contains(errs, "agorad store check") ||
		!strings.Contains(errs, "agorad store salvage") || strings.Contains(errs, "goroutine ") {
		t.Fatalf("run on a store without MANIFEST: exit %d, want %d with the damage and the commands named:\n%s", code, exitStore, errs)
	}
	code, out, errs = runOnce(t, "store", "check", "-c", path)
	if code != exitFailed || !strings.Contains(out, "DAMAGED file MANIFEST") || !strings.Contains(out, "3 listen") {
		t.Fatalf("check of a store without MANIFEST: exit %d\n%s%s", code, out, errs)
	}

	to := filepath.Join(t.TempDir(), "salvaged")
	code, out, errs = runOnce(t, "store", "salvage", "-c", path, "--to", to)
	if code == exitUsage || code == exitStore || !strings.Contains(out, "salvaged:") || !strings.Contains(out, "3 listen") {
		t.Fatalf("salvage: exit %d\n%s%s", code, out, errs)
	}
	for _, p := range []string{store, store + ".identity"} {
		if err := os.Rename(p, p+".damaged"); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(to, store); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(to+".identity", store+".identity"); err != nil {
		t.Fatal(err)
	}
	d = startDaemon(t, path, cfg.Control.Socket)
	if st := status(t, d.socket); st.Buffered != 3 {
		t.Fatalf("after salvage: %d buffered, want 3", st.Buffered)
	}
	if code := d.stop(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// TestStoreEncryptionKey: a store made with one key does not start with
// another (exit 4, the key named), and does with the right one.
func TestStoreEncryptionKey(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: agoractl build")
	}
	broker := brokertest.Start(t)
	broker.Stop()
	cfg := baseConfig(t, broker.URL())
	keyFile := filepath.Join(t.TempDir(), "agorad-store-key")
	write := func(k string) {
		if err := os.WriteFile(keyFile, []byte(k+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	key1 := hex.EncodeToString(bytes.Repeat([]byte{7}, 32))
	write(key1)
	t.Setenv("CREDENTIALS_DIRECTORY", filepath.Dir(keyFile))
	cfg.Storage.EncryptionKeyFile = "${CREDENTIALS_DIRECTORY}/agorad-store-key"
	path := writeConfig(t, cfg)
	d := startDaemon(t, path, cfg.Control.Socket)
	if out, code := agoractl(t, d.socket, "say", "kluis in kelder zeven"); code != 0 {
		t.Fatalf("say: %d %s", code, out)
	}
	if code := d.stop(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
	write(hex.EncodeToString(bytes.Repeat([]byte{8}, 32)))
	code, _, errs := runOnce(t, "run", "-c", path)
	if code != exitStore || !strings.Contains(errs, "key") {
		t.Fatalf("run with a wrong key: exit %d, want %d naming the key:\n%s", code, exitStore, errs)
	}
	write(key1)
	d = startDaemon(t, path, cfg.Control.Socket)
	if st := status(t, d.socket); st.Buffered != 1 {
		t.Fatalf("with the right key again: %d buffered, want 1", st.Buffered)
	}
}

// failingWriter is a stdout whose reader went away (a closed pipe).
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

// TestStoreCheckJSONWriteFails: when the JSON report cannot be written, the
// check does not exit 0 as if an intact store had been reported.
func TestStoreCheckJSONWriteFails(t *testing.T) {
	state := t.TempDir()
	s, err := buffer.Open(filepath.Join(state, "store"), buffer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendListen(buffer.Record{Text: "scheur in de balk"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	code := cmdStore(context.Background(), []string{"check", "--json", "--state-dir", state}, failingWriter{}, &errb)
	if code != exitFailed || !strings.Contains(errb.String(), "write the report") {
		t.Fatalf("check --json into a closed stdout: exit %d, stderr %q; want %d naming the write", code, errb.String(), exitFailed)
	}
	var out bytes.Buffer
	if code := cmdStore(context.Background(), []string{"check", "--json", "--state-dir", state}, &out, &errb); code != exitOK ||
		!strings.Contains(out.String(), "{") {
		t.Fatalf("check --json: exit %d, %q", code, out.String())
	}
}
