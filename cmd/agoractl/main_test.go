package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/cmd/internal/control"
	"github.com/agora/agorad/cmd/internal/control/controltest"
)

func TestMain(m *testing.M) {
	time.Local = time.UTC // human output prints local times
	os.Exit(m.Run())
}

func runCtl(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	code = run(ctx, args, &o, &e)
	return code, o.String(), e.String()
}

func TestCommands(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		code      int
		out, errs []string // substrings expected in stdout / stderr
		calls     []string // handler calls expected
		check     func(t *testing.T, f *controltest.Fake, stdout string)
	}{
		{name: "status", args: []string{"status"},
			out:   []string{"mode:", "listen", "buffered:", "3", "link:", "online", `"meting 3" at 2026-01-02 03:06:05`, "uptime:", "1h2m3s", "refused (store full):"},
			calls: []string{"status"}},
		{name: "status json", args: []string{"status", "--json"}, calls: []string{"status"},
			check: func(t *testing.T, f *controltest.Fake, out string) {
				var s control.Status
				if err := json.Unmarshal([]byte(out), &s); err != nil {
					t.Fatal(err)
				}
				if s.Mode != "listen" || s.Buffered != 3 || s.LastUtterance.Text != "meting 3" {
					t.Fatalf("%+v", s)
				}
			}},
		{name: "json flag first", args: []string{"--json", "outbox"}, out: []string{`"count": 0`}, calls: []string{"outbox 0"}},
		{name: "mode feedback", args: []string{"mode", "feedback"}, out: []string{"mode: listen -> feedback", "3 buffered item(s) sent as one batch"},
			calls: []string{"mode feedback"},
			check: func(t *testing.T, f *controltest.Fake, _ string) {
				if f.Mode != "feedback" || len(f.Entries) != 1 || len(f.Records) != 0 {
					t.Fatalf("fake state: %+v", f)
				}
			}},
		{name: "say joins words", args: []string{"say", "de", "deur", "klemt"}, out: []string{"stored in the listen buffer (say-4)", "mode: listen"},
			calls: []string{"say de deur klemt"}},
		{name: "say after --", args: []string{"say", "--", "--json", "is", "text"}, out: []string{"stored in the listen buffer"},
			calls: []string{"say --json is text"}},
		{name: "buffer list", args: []string{"buffer", "list", "--limit", "2"},
			out:   []string{"SEQ", "meting 1", "meting 2", "(2 of 3 shown"},
			calls: []string{"buffer.list 2"},
			check: func(t *testing.T, f *controltest.Fake, out string) {
				if strings.Contains(out, "meting 3") {
					t.Fatal("limit ignored")
				}
			}},
		{name: "buffer list json", args: []string{"buffer", "list", "--json"}, calls: []string{"buffer.list 0"},
			check: func(t *testing.T, f *controltest.Fake, out string) {
				var l control.BufferList
				if err := json.Unmarshal([]byte(out), &l); err != nil || len(l.Records) != 3 {
					t.Fatalf("%v %+v", err, l)
				}
			}},
		{name: "buffer export", args: []string{"buffer", "export"}, calls: []string{"buffer.export"},
			check: func(t *testing.T, f *controltest.Fake, out string) {
				sc := bufio.NewScanner(strings.NewReader(out))
				var got []control.Record
				for sc.Scan() {
					var r control.Record
					if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
						t.Fatalf("line %q: %v", sc.Text(), err)
					}
					got = append(got, r)
				}
				if !reflect.DeepEqual(got, f.Records) {
					t.Fatalf("export %+v != buffer %+v", got, f.Records)
				}
			}},
		{name: "buffer clear", args: []string{"buffer", "clear", "--yes"}, out: []string{"deleted 3 item(s)"}, calls: []string{"buffer.clear"}},
		{name: "buffer clear refused", args: []string{"buffer", "clear"}, code: 2, errs: []string{"--yes"},
			check: func(t *testing.T, f *controltest.Fake, _ string) {
				if len(f.Records) != 3 {
					t.Fatal("buffer cleared without --yes")
				}
			}},
		{name: "outbox", args: []string{"outbox"}, out: []string{"0 entries waiting (online)"}, calls: []string{"outbox 0"}},
		{name: "outbox drop without id", args: []string{"outbox", "drop"}, code: 2, errs: []string{"outbox drop: one entry id"}},
		{name: "outbox unknown subcommand", args: []string{"outbox", "purge", "x"}, code: 2, errs: []string{`unknown subcommand "purge"`}},
		{name: "outbox drop on a daemon without parked entries", args: []string{"outbox", "drop", "x"}, code: 1, errs: []string{"keeps no parked entries"}},
		{name: "flush", args: []string{"flush"}, out: []string{"3 item(s) moved to the outbox as one batch (seq 4)"}, calls: []string{"flush"}},
		{name: "ptt down", args: []string{"ptt", "down"}, out: []string{"push-to-talk: down"}, calls: []string{"ptt true"}},
		{name: "ptt up json", args: []string{"--json", "ptt", "up"}, out: []string{`"down": false`}, calls: []string{"ptt false"}},
		{name: "help", args: []string{"--help"}, out: []string{"usage: agoractl"}},
		{name: "no command", args: nil, code: 2, errs: []string{"no command", "usage:"}},
		{name: "unknown command", args: []string{"dance"}, code: 2, errs: []string{`unknown command "dance"`}},
		{name: "bad mode", args: []string{"mode", "loud"}, code: 2, errs: []string{`mode: "loud" is not listen or feedback`}},
		{name: "mode missing", args: []string{"mode"}, code: 2, errs: []string{"wrong number of arguments"}},
		{name: "bad ptt", args: []string{"ptt", "sideways"}, code: 2, errs: []string{"ptt:"}},
		{name: "say empty", args: []string{"say"}, code: 2, errs: []string{"say: no text"}},
		{name: "buffer nothing", args: []string{"buffer"}, code: 2, errs: []string{"buffer: want"}},
		{name: "buffer bad", args: []string{"buffer", "eat"}, code: 2, errs: []string{`unknown subcommand "eat"`}},
		{name: "unknown flag", args: []string{"--loud", "status"}, code: 2, errs: []string{"unknown flag --loud"}},
		{name: "bad limit", args: []string{"buffer", "list", "--limit", "x"}, code: 2, errs: []string{"--limit"}},
		{name: "extra args", args: []string{"status", "now"}, code: 2, errs: []string{"wrong number"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := controltest.NewFake(3)
			path := controltest.Serve(t, f)
			args := append([]string{"--socket", path}, tc.args...)
			code, out, errs := runCtl(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out, errs)
			}
			for _, w := range tc.out {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.errs {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errs)
				}
			}
			if tc.code == 0 && errs != "" {
				t.Errorf("stderr on success: %s", errs)
			}
			if got := f.CallLog(); !reflect.DeepEqual(got, tc.calls) && !(len(got) == 0 && len(tc.calls) == 0) {
				t.Errorf("handler calls %q, want %q", got, tc.calls)
			}
			if tc.check != nil {
				tc.check(t, f, out)
			}
		})
	}
}

func TestDaemonError(t *testing.T) {
	f := controltest.NewFake(0)
	f.Err = errors.New("storage full")
	path := controltest.Serve(t, f)
	code, out, errs := runCtl(t, "--socket="+path, "say", "hallo")
	if code != 1 || out != "" || !strings.Contains(errs, "agoractl: say: storage full") {
		t.Fatalf("code %d out %q err %q", code, out, errs)
	}
}

func TestNotRunning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agorad.sock")
	code, out, errs := runCtl(t, "--socket", path, "status")
	want := "agoractl: agorad is not running (no control socket at " + path + ")\n"
	if code != 1 || out != "" || errs != want {
		t.Fatalf("code %d out %q err %q, want %q", code, out, errs, want)
	}
	// The environment variable picks the socket too.
	t.Setenv("AGORAD_SOCKET", path)
	if code, _, errs := runCtl(t, "status"); code != 1 || !strings.Contains(errs, path) {
		t.Fatalf("AGORAD_SOCKET ignored: %d %s", code, errs)
	}
	// Usage errors are reported without a daemon.
	if code, _, _ := runCtl(t, "--socket", path, "mode", "x"); code != 2 {
		t.Fatalf("usage error exit %d", code)
	}
}
