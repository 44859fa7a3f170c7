package buffer

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// secretSamples is audio whose 16-bit encoding is a sequence no file would
// hold by chance.
func secretSamples() ([]float32, []byte) {
	smp := make([]float32, 4000)
	for i := range smp {
		smp[i] = float32(int16(1000+(i*7919)%20000)) / math.MaxInt16
	}
	enc := encodeAudio(smp, time.Unix(0, 0))[journalHeaderLen:]
	return smp, enc[1000:1064] // 32 samples from the middle
}

const secretNote = "geheime notitie: kluis in kelder zeven"

// fillSecret writes notes, an outbox entry and journaled audio, and returns
// a copy of dir taken while the store is still open (write-ahead log
// included), with the store closed after.
func fillSecret(t *testing.T, dir string, key []byte) (open string) {
	t.Helper()
	s, err := Open(dir, Options{Logger: quiet(), EncryptionKey: key})
	if err != nil {
		t.Fatal(err)
	}
	smp, _ := secretSamples()
	for i := range 20 {
		if _, err := s.AppendListen(rec(secretNote + " " + strings.Repeat("x", i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.FlushListen(false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendListen(rec(secretNote + " in de buffer")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.JournalAudio(smp, time.Now()); err != nil {
		t.Fatal(err)
	}
	open = dir + ".open"
	copyStore(t, dir, open)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return open
}

// grepDir reports which files under the directories hold needle.
func grepDir(t *testing.T, needle []byte, dirs ...string) []string {
	t.Helper()
	var hits []string
	for _, d := range dirs {
		paths, _ := filepath.Glob(filepath.Join(d, "*"))
		paths = append(paths, identityPath(d))
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			if bytes.Contains(b, needle) {
				hits = append(hits, p)
			}
		}
	}
	return hits
}

func newKey(t *testing.T) []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

func TestEncryptionAtRest(t *testing.T) {
	_, pattern := secretSamples()
	// The control: without a key the grep finds both, so finding nothing
	// below means something.
	plain := filepath.Join(t.TempDir(), "plain")
	plainOpen := fillSecret(t, plain, nil)
	if len(grepDir(t, []byte(secretNote), plain, plainOpen)) == 0 || len(grepDir(t, pattern, plain, plainOpen)) == 0 {
		t.Fatal("control: note text or audio not found in an unencrypted store's files")
	}

	key := newKey(t)
	dir := filepath.Join(t.TempDir(), "store")
	open := fillSecret(t, dir, key)
	for _, needle := range [][]byte{[]byte(secretNote), []byte("kluis"), pattern} {
		if hits := grepDir(t, needle, dir, open); len(hits) > 0 {
			t.Errorf("%q found in the raw files of an encrypted store: %v", needle[:min(len(needle), 16)], hits)
		}
	}

	want := func(t *testing.T, s *Store) {
		t.Helper()
		l, err := s.ListListen(0)
		if err != nil || len(l) != 1 || !strings.HasPrefix(l[0].Text, secretNote) {
			t.Fatalf("listen buffer after reopen: %v %v", l, err)
		}
		p, err := s.Pending(0)
		if err != nil || len(p) != 1 || p[0].Kind != KindBatch || !bytes.Contains(p[0].Body, []byte("kluis")) {
			t.Fatalf("outbox after reopen: %d entries, %v", len(p), err)
		}
		a, err := s.PendingAudio()
		if err != nil || len(a) != 1 || len(a[0].Samples) != 4000 {
			t.Fatalf("journal after reopen: %v", err)
		}
	}
	for _, d := range []string{dir, open} {
		s, err := Open(d, Options{Logger: quiet(), EncryptionKey: key})
		if err != nil {
			t.Fatalf("reopen %s with the right key: %v", d, err)
		}
		want(t, s)
		s.Close()
	}

	refused := func(t *testing.T, d string, k []byte, why string) {
		t.Helper()
		before := dirState(t, d)
		s, err := Open(d, Options{Logger: quiet(), EncryptionKey: k})
		if err == nil {
			s.Close()
			t.Fatalf("%s: opened", why)
		}
		if !errors.Is(err, ErrKey) {
			t.Errorf("%s: error does not wrap ErrKey: %v", why, err)
		}
		if !strings.Contains(err.Error(), "key") {
			t.Errorf("%s: error does not say key: %v", why, err)
		}
		if after := dirState(t, d); after != before {
			t.Errorf("%s: the refused open changed the store's files:\n%s\n%s", why, before, after)
		}
		t.Logf("%s: %v", why, err)
	}
	refused(t, dir, newKey(t), "wrong key")
	refused(t, dir, nil, "no key")
	refused(t, plain, key, "key on an unencrypted store")

	// Still everything with the right key after the refusals.
	s, err := Open(dir, Options{Logger: quiet(), EncryptionKey: key})
	if err != nil {
		t.Fatal(err)
	}
	want(t, s)
	s.Close()

	// Master key rotation.
	key2 := newKey(t)
	if err := Rekey(dir, newKey(t), key2); !errors.Is(err, ErrKey) {
		t.Errorf("rekey with a wrong current key: %v", err)
	}
	if err := Rekey(dir, key, key2); err != nil {
		t.Fatalf("rekey: %v", err)
	}
	s, err = Open(dir, Options{Logger: quiet(), EncryptionKey: key2})
	if err != nil {
		t.Fatalf("open with the new key: %v", err)
	}
	want(t, s)
	if err := Rekey(dir, key2, key); err == nil {
		t.Error("rekey of an open store succeeded")
	}
	if _, err := s.AppendListen(rec("na de sleutelwissel")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	refused(t, dir, key, "old key after rotation")

	// Check and Salvage with the key; the salvaged store is encrypted too.
	r, err := Check(dir, CheckOptions{EncryptionKey: key2, TempDir: t.TempDir()})
	if err != nil || r.Damaged() || r.Listen != 2 || r.Outbox != 1 || r.Journal != 1 {
		t.Fatalf("check: %+v %v", r, err)
	}
	if _, err := Check(dir, CheckOptions{EncryptionKey: key, TempDir: t.TempDir()}); !errors.Is(err, ErrKey) {
		t.Errorf("check with the old key: %v", err)
	}
	to := filepath.Join(t.TempDir(), "salvaged")
	if _, err := Salvage(dir, to, CheckOptions{EncryptionKey: key2, TempDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if hits := grepDir(t, []byte("kluis"), to); len(hits) > 0 {
		t.Errorf("salvaged store holds plain text: %v", hits)
	}

	// A plain store salvaged into an encrypted one, and back.
	enc := filepath.Join(t.TempDir(), "encrypted")
	if _, err := Salvage(plain, enc, CheckOptions{TargetKey: key, TempDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if hits := grepDir(t, []byte("kluis"), enc); len(hits) > 0 {
		t.Errorf("plain store salvaged with a key holds plain text: %v", hits)
	}
	back := filepath.Join(t.TempDir(), "plain-again")
	if _, err := Salvage(enc, back, CheckOptions{EncryptionKey: key, TargetPlain: true, TempDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir string
		key []byte
	}{{enc, key}, {back, nil}} {
		s, err := Open(c.dir, Options{Logger: quiet(), EncryptionKey: c.key})
		if err != nil {
			t.Fatalf("open %s: %v", c.dir, err)
		}
		want(t, s)
		s.Close()
	}

	// The key registry gone: the data keys with it. Refused, not a new store.
	if err := os.Remove(filepath.Join(dir, keyRegistryName)); err != nil {
		t.Fatal(err)
	}
	refused(t, dir, key2, "KEYREGISTRY deleted")
}

// dirState is the names, sizes and mtimes of a store's files.
func dirState(t *testing.T, dir string) string {
	var b strings.Builder
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() == "LOCK" {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %d %s\n", e.Name(), fi.Size(), fi.ModTime())
	}
	return b.String()
}

func TestReadKeyFile(t *testing.T) {
	dir := t.TempDir()
	raw := newKey(t)[:24]
	hexKey := newKey(t)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Setenv("CREDENTIALS_DIRECTORY", dir)
	cases := []struct {
		name, path string
		want       []byte
		err        string
	}{
		{"raw 24 bytes", write("raw", raw), raw, ""},
		{"hex with newline", write("hex", []byte(hex.EncodeToString(hexKey)+"\n")), hexKey, ""},
		{"systemd credential", "${CREDENTIALS_DIRECTORY}/hex", hexKey, ""},
		{"too short", write("short", []byte("abc")), nil, "want 16, 24 or 32"},
		{"missing", filepath.Join(dir, "nope"), nil, "no such file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ReadKeyFile(c.path)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, c.want) {
				t.Fatalf("got %x %v, want %x", got, err, c.want)
			}
		})
	}
}
