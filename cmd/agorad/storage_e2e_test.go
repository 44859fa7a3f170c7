package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agora/agorad/buffer/fsfault"
	"github.com/agora/agorad/cmd/internal/control"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
)

// proc is `agorad run` as a process of its own (agoradBinary): a store on
// a file system gone read-only cannot be closed by the test process, and
// the SIGTERM is timed on the real process.
type proc struct {
	cmd    *exec.Cmd
	log    *brokertest.Log
	done   chan struct{}
	socket string
}

func startProc(t *testing.T, cfgPath, socket string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(agoradBinary(t), "run", "-c", cfgPath), log: &brokertest.Log{}, done: make(chan struct{}), socket: socket}
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.kill() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		if c, err := control.Dial(socket); err == nil {
			c.Close()
			return p
		}
		select {
		case <-p.done:
			t.Fatalf("agorad ended (exit %d) before its socket answered:\n%s", p.cmd.ProcessState.ExitCode(), p.log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("agorad never answered:\n%s", p.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *proc) kill() {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// term sends SIGTERM and waits up to limit: the time to exit and the exit
// code, or -1 and SIGKILL when it did not exit.
func (p *proc) term(limit time.Duration) (time.Duration, int) {
	began := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return time.Since(began), p.cmd.ProcessState.ExitCode()
	case <-time.After(limit):
		p.kill()
		return time.Since(began), -1
	}
}

// exited waits up to limit for the process to end by itself.
func (p *proc) exited(limit time.Duration) (int, bool) {
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode(), true
	case <-time.After(limit):
		return 0, false
	}
}

// arrived is the text of each utterance at the subscriber, in arrival
// order, with its seq (0 for one sent unstored) and which texts came
// unstored; a message sent twice (a redelivery) counts once.
func arrived(sub *brokertest.Subscriber) (texts []string, seqs []int64, unstored map[string]bool) {
	seen, unstored := map[string]bool{}, map[string]bool{}
	for _, m := range sub.Messages() {
		if !strings.HasSuffix(m.Topic, "/utterances") {
			continue
		}
		var v struct {
			ID       string `json:"id"`
			Seq      int64  `json:"seq"`
			Text     string `json:"text"`
			Unstored bool   `json:"unstored"`
		}
		if json.Unmarshal(m.Payload, &v) != nil || seen[v.ID] {
			continue
		}
		seen[v.ID] = true
		texts, seqs = append(texts, v.Text), append(seqs, v.Seq)
		if v.Unstored {
			unstored[v.Text] = true
		}
	}
	return texts, seqs, unstored
}

func lastStorageStatus(sub *brokertest.Subscriber) *protocol.StorageHealth {
	var last *protocol.StorageHealth
	for _, m := range sub.Messages() {
		var s protocol.StatusMessage
		if strings.HasSuffix(m.Topic, "/status") && json.Unmarshal(m.Payload, &s) == nil && s.Online {
			last = s.Storage
		}
	}
	return last
}

func waitUntil(t *testing.T, what string, limit time.Duration, ok func() bool) time.Duration {
	t.Helper()
	began := time.Now()
	for !ok() {
		if time.Since(began) > limit {
			t.Fatalf("no %s within %s", what, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(began)
}

// TestRunStorageFaults: agorad run (feedback mode, typed notes, real
// mosquitto) with its state directory on a loop-mounted ext4, each fault
// made by the kernel. For each: the failure is detected within seconds and
// told (agoractl status, the metric, the retained status, one "storage
// failed" per episode in the log: the earcon's), nothing accepted before it
// is lost, what is said during it is accepted or refused with a non-zero
// exit, and the daemon comes back (in place where the kernel allows it,
// else by the restart systemd makes). The row of the table is logged.
func TestRunStorageFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: loop-mounted ext4, agorad and agoractl builds, mosquitto")
	}
	type row struct {
		fault func(t *testing.T, fs *fsfault.Ext4, state string) (undo func(t *testing.T))
		kind  string // what is detected first
		// inPlace: the daemon recovers without a restart once undo ran;
		// exits: the daemon exits by itself with this code after undo.
		inPlace bool
		exits   int
	}
	for _, tc := range []struct {
		name string
		row
	}{
		{"ext4 error: remounted read-only", row{func(t *testing.T, fs *fsfault.Ext4, _ string) func(*testing.T) {
			fs.TriggerError(t)
			return nil // the way back needs the daemon's files closed: stop, e2fsck, mount, start
		}, "read_only", false, 0}},
		{"filesystem filled", row{func(t *testing.T, fs *fsfault.Ext4, _ string) func(*testing.T) {
			p := fs.Fill(t)
			return func(t *testing.T) {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			}
		}, "full", true, 0}},
		{"state directory removed", row{func(t *testing.T, _ *fsfault.Ext4, state string) func(*testing.T) {
			if err := os.RemoveAll(filepath.Join(state, "store")); err != nil {
				t.Fatal(err)
			}
			return nil
		}, "gone", false, 0}},
		{"another filesystem mounted in its place", row{func(t *testing.T, _ *fsfault.Ext4, state string) func(*testing.T) {
			// The card's mount replaced by another file system (a tmpfs):
			// the store is gone; then a store directory appears on it (the
			// card mounted again), which is another directory: replaced.
			if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", state).CombinedOutput(); err != nil {
				t.Fatalf("mount tmpfs over the state directory: %v: %s", err, out)
			}
			t.Cleanup(func() { _ = exec.Command("umount", "-l", state).Run() })
			return func(t *testing.T) {
				if err := os.Mkdir(filepath.Join(state, "store"), 0o700); err != nil {
					t.Fatal(err)
				}
			}
		}, "gone", false, exitStorageReplaced}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := fsfault.MountExt4(t, 256)
			broker := brokertest.Start(t)
			sub := broker.Subscribe(t, "agora/v1/inspector-7/+")
			cfg := baseConfig(t, broker.URL())
			cfg.Mode = "feedback"
			cfg.StateDir = filepath.Join(fs.Dir, "state")
			cfg.Metrics.Listen = freeLoopback(t)
			cfgPath := writeConfig(t, cfg)
			p := startProc(t, cfgPath, cfg.Control.Socket)
			say := func(text string) bool {
				out, code := agoractl(t, p.socket, "say", text)
				if code != 0 {
					t.Logf("say %q refused: exit %d: %s", text, code, strings.TrimSpace(out))
				} else if strings.HasPrefix(text, "during") && !strings.Contains(out, "the store has failed: sent to the backend without being stored") {
					t.Errorf("say %q during the failure: %s; want it to say it was sent unstored", text, out)
				} else if strings.Contains(text, "offline") && !strings.Contains(out, "the store has failed: held in memory") {
					t.Errorf("say %q during the failure, offline: %s; want it to say it is held in memory", text, out)
				}
				return code == 0
			}
			before := []string{"before one", "before two"}
			for _, s := range before {
				if !say(s) {
					t.Fatalf("say %q refused before the fault:\n%s", s, p.log.String())
				}
			}
			waitUntil(t, "the notes before the fault at the subscriber", 10*time.Second, func() bool { got, _, _ := arrived(sub); return len(got) == 2 })

			undo := tc.fault(t, fs, cfg.StateDir)
			detected := waitUntil(t, "the failure in agoractl status", 10*time.Second, func() bool {
				s := status(t, p.socket)
				return strings.HasPrefix(s.Storage, "failed ("+tc.kind)
			})
			st := status(t, p.socket)
			if len(st.Problems) == 0 || !strings.Contains(st.Problems[0], "-- fix: ") {
				t.Errorf("agoractl status problems %q: want the failure and its fix", st.Problems)
			}
			if v := metricValue(t, cfg.Metrics.Listen, `agorad_storage_failed{kind="`+tc.kind+`"}`); v != 1 {
				t.Errorf("agorad_storage_failed{kind=%q} = %v, want 1", tc.kind, v)
			}
			waitUntil(t, "the failure in the retained status", 10*time.Second, func() bool {
				s := lastStorageStatus(sub)
				return s != nil && s.State == "failed" && s.Kind == tc.kind
			})
			told := "status+problem+metric+retained status"

			during := []string{"during one", "during two"}
			var accepted, refused []string
			for _, s := range during {
				if say(s) {
					accepted = append(accepted, s)
				} else {
					refused = append(refused, s)
				}
			}
			// The link is up: what the failed store refuses is sent unstored.
			if len(refused) != 0 {
				t.Errorf("refused %q while the link was up", refused)
			}
			if v := metricValue(t, cfg.Metrics.Listen, "agorad_unstored_sent_total"); v != float64(len(accepted)) {
				t.Errorf("agorad_unstored_sent_total = %v, want %d", v, len(accepted))
			}
			spooled := 0
			if tc.kind == "read_only" || tc.kind == "full" {
				// With the link down too: on a full disk (which can come
				// back in place) it is held in memory and reaches the
				// store when space returns; on a file system gone
				// read-only nothing can keep it: refused (exit 1 and the
				// error earcon), never accepted silently.
				broker.Stop()
				waitUntil(t, "link down", 15*time.Second, func() bool { return !status(t, p.socket).Online })
				kept := say("said while offline")
				switch {
				case kept && tc.kind == "full":
					spooled++
					if !strings.Contains(strings.Join(status(t, p.socket).Problems, " "), "1 utterance(s) held in memory") {
						t.Errorf("status does not say what is held: %q", status(t, p.socket).Problems)
					}
				case kept:
					t.Errorf("a note was accepted with the store read-only and the link down")
				case tc.kind == "full":
					t.Errorf("a note was refused on a full disk with room in the memory spool")
				default:
					refused = append(refused, "said while offline")
				}
				broker.Start()
				waitUntil(t, "link up again", 30*time.Second, func() bool { return status(t, p.socket).Online })
			}
			if n := strings.Count(p.log.String(), `msg="storage failed: error earcon played"`); n != 1 {
				t.Errorf("%d 'storage failed' announcements (with the earcon), want 1 for the episode:\n%s", n, p.log.String())
			}

			recovered := "no"
			var after time.Duration
			if undo != nil {
				undo(t)
			}
			switch {
			case tc.inPlace:
				after = waitUntil(t, "storage ok again", 30*time.Second, func() bool { return status(t, p.socket).Storage == "ok" })
				recovered = fmt.Sprintf("yes, %s after the fault was undone", after.Round(100*time.Millisecond))
				if s := lastStorageStatus(sub); s != nil {
					waitUntil(t, "a retained status without storage failure", 10*time.Second, func() bool { return lastStorageStatus(sub) == nil })
				}
			case tc.exits != 0:
				code, ok := p.exited(15 * time.Second)
				if !ok || code != tc.exits {
					t.Fatalf("after the replaced directory became usable: exited %v with %d, want exit %d:\n%s", ok, code, tc.exits, p.log.String())
				}
				recovered = fmt.Sprintf("by restart: exit %d", code)
			}

			exitTime, exitCode := time.Duration(0), 0
			if tc.exits == 0 {
				exitTime, exitCode = p.term(20 * time.Second)
			}
			// Put the state directory back as systemd's restart would find it
			// after the operator's fix, and start again.
			switch {
			case tc.kind == "read_only":
				if err := fs.Repair(); err != nil {
					t.Fatalf("repair: %v", err)
				}
			case tc.exits == exitStorageReplaced:
				if out, err := exec.Command("umount", cfg.StateDir).CombinedOutput(); err != nil {
					t.Fatalf("umount the tmpfs: %v: %s", err, out)
				}
			}
			if undo != nil || tc.kind == "read_only" {
				p = startProc(t, cfgPath, cfg.Control.Socket)
				if !say("after one") {
					t.Fatalf("say after the restart refused:\n%s", p.log.String())
				}
				if tc.inPlace {
					recovered += "; restart fine"
				}
			}
			want := append(append([]string{}, before...), accepted...)
			if spooled > 0 {
				want = append(want, "said while offline") // held, then stored when space returned
			}
			if undo != nil || tc.kind == "read_only" {
				want = append(want, "after one")
			}
			var got []string
			var seqs []int64
			var unstored map[string]bool
			waitUntil(t, fmt.Sprintf("%q at the subscriber", want), 15*time.Second, func() bool {
				got, seqs, unstored = arrived(sub)
				return len(got) >= len(want)
			})
			time.Sleep(500 * time.Millisecond) // anything more would arrive by now
			got, seqs, unstored = arrived(sub)
			// A note refused because its commit failed may still have
			// reached Badger's log (seen on ext4 gone read-only): it then
			// arrives after the repair. Not lost; counted in the row.
			lateRefused := 0
			var kept []string
			for _, g := range got {
				if slices.Contains(refused, g) {
					lateRefused++
					continue
				}
				kept = append(kept, g)
			}
			if strings.Join(kept, "|") != strings.Join(want, "|") {
				t.Errorf("arrived %q, want %q in order (refused: %q)", got, want, refused)
			}
			last := int64(0)
			for i, seq := range seqs {
				switch {
				case unstored[got[i]] != slices.Contains(accepted, got[i]):
					t.Errorf("%q arrived unstored=%v; want unstored exactly for those said during the failure", got[i], unstored[got[i]])
				case unstored[got[i]] && seq != 0:
					t.Errorf("unstored %q has seq %d", got[i], seq)
				case !unstored[got[i]] && seq <= last && !slices.Contains(refused, got[i]):
					t.Errorf("stored seqs not increasing: %v", seqs)
				case !unstored[got[i]]:
					last = seq
				}
			}
			// A closed store on a read-only file system blocks in Badger's
			// close (issue 23 item 3, another change); the others stop in time.
			if tc.kind != "read_only" && tc.exits == 0 && (exitCode < 0 || exitTime > 5*time.Second) {
				t.Errorf("SIGTERM: exit %d after %s, want an exit within 5s", exitCode, exitTime)
			}
			term := "did not exit in 20s (SIGKILL)"
			if exitCode >= 0 && tc.exits == 0 {
				term = fmt.Sprintf("%s, exit %d", exitTime.Round(10*time.Millisecond), exitCode)
			} else if tc.exits != 0 {
				term = "exited by itself"
			}
			t.Logf("ROW | %s | %s | %s | before lost: %d of %d | during: %d sent unstored, %d held in memory (%d of them arrived), %d refused (exit 1 + earcon; %d of them arrived after the repair, kept by the failed commit) | SIGTERM: %s | recovered: %s |",
				tc.name, detected.Round(100*time.Millisecond), told, len(before)-countIn(got, before), len(before),
				countIn(got, accepted), spooled, countIn(got, []string{"said while offline"})*min(spooled, 1), len(refused), lateRefused, term, recovered)
		})
	}
}

func countIn(got, want []string) int {
	n := 0
	for _, w := range want {
		for _, g := range got {
			if g == w {
				n++
				break
			}
		}
	}
	return n
}

// The first report, in listen mode: notes stored, then ext4's error
// path remounts the state directory read-only. Detected and told within
// seconds; a note said during it is refused with a non-zero exit (and the
// error earcon), never accepted silently; the wake still switches (in
// memory) and its question is sent unstored; after the operator's repair
// (stop, e2fsck, mount, start) the notes of before are still in the listen
// buffer and the next wake sends them.
func TestRunStorageReadOnlyListenMode(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: loop-mounted ext4, agorad and agoractl builds, mosquitto")
	}
	fs := fsfault.MountExt4(t, 256)
	broker := brokertest.Start(t)
	sub := broker.Subscribe(t, "agora/v1/inspector-7/+")
	cfg := baseConfig(t, broker.URL())
	cfg.Mode = "listen"
	cfg.StateDir = filepath.Join(fs.Dir, "state")
	cfgPath := writeConfig(t, cfg)
	p := startProc(t, cfgPath, cfg.Control.Socket)
	for _, s := range []string{"Scheur in de balk bij as drie.", "Roest aan de noordgevel."} {
		if out, code := agoractl(t, p.socket, "say", s); code != 0 {
			t.Fatalf("say %q: exit %d: %s", s, code, out)
		}
	}
	fs.TriggerError(t)
	detected := waitUntil(t, "the failure in agoractl status", 10*time.Second, func() bool {
		return strings.HasPrefix(status(t, p.socket).Storage, "failed (read_only")
	})
	// A note cannot be kept (nothing in memory would reach the store
	// before the repair's stop): refused, audibly.
	if out, code := agoractl(t, p.socket, "say", "Vochtplek in het plafond."); code == 0 || !strings.Contains(out, "read-only file system") {
		t.Errorf("note on a read-only store: exit %d: %s; want a refusal naming it", code, out)
	}
	// The wake still works: the mode changes in memory and the question is
	// sent unstored; the notes of before stay stored.
	if out, code := agoractl(t, p.socket, "say", "AGORA, wat heb ik gezegd?"); code != 0 {
		t.Errorf("wake on a read-only store: exit %d: %s", code, out)
	}
	if st := status(t, p.socket); st.Mode != "feedback" || st.Buffered != 2 {
		t.Errorf("during: mode %s buffered %d; want feedback (in memory), 2", st.Mode, st.Buffered)
	}
	unstoredQuestion := func(m []brokertest.Message) bool {
		for _, d := range dataMessages(m) {
			if d["unstored"] == true && describe(d) == "wat heb ik gezegd?" {
				return true
			}
		}
		return false
	}
	if _, ok := sub.WaitFor(10*time.Second, unstoredQuestion); !ok {
		t.Errorf("no unstored question during the failure: %v", dataMessages(sub.Messages()))
	}
	// Badger applies a commit to its memtable before the write-ahead log's
	// sync fails with EROFS: the running store then holds (and the uplink
	// delivers) what was reported failed, a batch with the refused note
	// included. Measured, logged in the row, not asserted either way.
	var during []string
	for _, d := range dataMessages(sub.Messages()) {
		during = append(during, describe(d))
	}
	exitTime, code := p.term(20 * time.Second)
	if err := fs.Repair(); err != nil {
		t.Fatalf("repair: %v", err)
	}
	p = startProc(t, cfgPath, cfg.Control.Socket)
	// The mode changed in memory was never persisted (the store did not
	// come back before the stop): listen again, the notes still buffered.
	if st := status(t, p.socket); st.Mode != "listen" || st.Buffered != 2 || st.Storage != "ok" {
		t.Fatalf("after the repair: mode %s buffered %d storage %q; want listen, 2, ok", st.Mode, st.Buffered, st.Storage)
	}
	if out, code := agoractl(t, p.socket, "say", "AGORA, wat heb ik gezegd?"); code != 0 {
		t.Fatalf("wake after the repair: exit %d: %s", code, out)
	}
	// Nothing accepted is lost: the notes of before and the question reach
	// the backend (each at least once; a message re-sent under its id is
	// one message).
	n := len(dataMessages(sub.Messages()))
	sub.WaitFor(15*time.Second, func(m []brokertest.Message) bool { return len(dataMessages(m)) >= n+2 })
	time.Sleep(500 * time.Millisecond) // anything more would arrive by now
	var got []string
	texts := map[string]int{}
	for _, m := range firstByID(dataMessages(sub.Messages())) {
		got = append(got, describe(m))
		if items, ok := m["items"].([]any); ok {
			for _, it := range items {
				texts[it.(map[string]any)["text"].(string)]++
			}
		} else {
			texts[fmt.Sprint(m["text"])]++
		}
	}
	for _, want := range []string{"Scheur in de balk bij as drie.", "Roest aan de noordgevel.", "wat heb ik gezegd?"} {
		if texts[want] == 0 {
			t.Errorf("%q never reached the backend: %q", want, got)
		}
	}
	if st := status(t, p.socket); st.Buffered != 0 || st.Mode != "feedback" {
		t.Errorf("after the wake: mode %s buffered %d", st.Mode, st.Buffered)
	}
	t.Logf("during the failure the backend got %q; in all (by id) %q", during, got)
	t.Logf("ROW | ext4 error, listen mode | %s | before lost: 0 of 2 | during: note refused (exit 1 + earcon) but delivered by the running store (%d delivered during); wake switched in memory, question sent unstored | SIGTERM: %s (exit %d; -1 = SIGKILL) | recovered: by stop + e2fsck + mount + start; notes of before delivered %d and %d times |",
		detected.Round(100*time.Millisecond), len(during), exitTime.Round(10*time.Millisecond), code,
		texts["Scheur in de balk bij as drie."], texts["Roest aan de noordgevel."])
}
