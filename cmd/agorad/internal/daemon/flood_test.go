package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
)

// procStatus reads fields (kB) of /proc/self/status: VmRSS is the resident
// set, RssAnon its anonymous part (heap, stacks), RssFile the pages of
// mapped files (Badger's tables and value log, the binary), which the
// kernel can drop under pressure.
func procStatus(fields ...string) map[string]int64 {
	out := make(map[string]int64, len(fields))
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok || !slices.Contains(fields, name) {
			continue
		}
		var kb int64
		fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb)
		out[name] = kb
	}
	return out
}

// TestReplyFloodStaysOnline (issue 27): replies of 8,000 characters queued
// in the device's broker session while it was off (default 1,000;
// AGORAD_FLOOD_REPLIES=10000 for the full case), then the daemon
// starts in listen mode on real mosquitto. It used to take 30+ s per
// session and drop it (SUBSCRIBE/PUBLISH timed out behind the backlog),
// offline for minutes, with every reply stored. Now: online within 10 s,
// never reconnecting while it works through the backlog, every reply acked
// with its outcome (held; dropped for the oldest beyond buffer.MaxReplies),
// at most MaxReplies open, memory bounded.
func TestReplyFloodStaysOnline(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto, thousands of replies")
	}
	n := envInt("AGORAD_FLOOD_REPLIES", 1000)
	testaudio.NewVirtualMic(t, nil)
	broker := brokertest.Start(t)
	cfg := replyConfig(t, broker.URL())
	cfg.Mode = "listen"
	be := newBackend(t, broker, cfg.DeviceID)
	// A first run creates the device's persistent session.
	_, stop := runDaemon(t, Options{Config: cfg})
	stop()

	text := strings.Repeat("De scheur in de noordgevel is gemeten. ", 206)[:8000]
	toks := make([]paho.Token, 0, n)
	for i := range n {
		payload, _ := json.Marshal(protocol.ReplyCommand{ID: fmt.Sprint("flood-", i), Type: protocol.CmdReply, Text: text})
		toks = append(toks, be.cli.Publish(protocol.Topic(cfg.DeviceID, protocol.TopicCommands), 1, false, payload))
	}
	for _, tok := range toks {
		if !tok.WaitTimeout(time.Minute) || tok.Error() != nil {
			t.Fatalf("queue reply: %v", tok.Error())
		}
	}
	toks = nil
	runtime.GC()
	rss0 := procStatus("VmRSS", "RssAnon")

	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	t.Cleanup(func() {
		if t.Failed() {
			logMu.Lock()
			t.Logf("daemon warnings:\n%s", lastLines(logs.String(), 40))
			logMu.Unlock()
		}
	})
	start := time.Now()
	d, _ := runDaemon(t, Options{Config: cfg, Logger: logger}) // fails unless online within 15 s
	online := time.Since(start)
	if online > 10*time.Second {
		t.Errorf("online after %v with %d replies queued, want within 10 s", online, n)
	}
	// The backend's ping must be answered while the backlog is worked
	// through: the session, and the commands after the flood, do not wait
	// for it.
	pingAt := time.Now()
	if tok := be.cli.Publish(protocol.Topic(cfg.DeviceID, protocol.TopicCommands), 1, false,
		[]byte(`{"id":"flood-ping","type":"ping"}`)); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("publish ping: %v", tok.Error())
	}
	var pong time.Duration
	beforePong := -1             // replies acked before the ping was, in publish order
	acked := map[string]string{} // reply id -> last outcome
	var maxRSS, maxAnon, maxHeap int64
	seen := 0
	var offline time.Duration
	deadline := time.Now().Add(time.Duration(n/10+60) * time.Second)
	for {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		maxHeap = max(maxHeap, int64(ms.HeapInuse))
		ps := procStatus("VmRSS", "RssAnon")
		maxRSS, maxAnon = max(maxRSS, ps["VmRSS"]), max(maxAnon, ps["RssAnon"])
		if !d.up.Online() && offline == 0 {
			offline = time.Since(start)
			t.Errorf("offline %v after start, while working through the backlog", offline)
		}
		msgs := be.acks.Messages()
		for _, m := range msgs[seen:] {
			var a replyAck
			if json.Unmarshal(m.Payload, &a) != nil {
				continue
			}
			switch {
			case a.CommandType == protocol.CmdReply:
				acked[a.CommandID] = a.Outcome
			case a.CommandID == "flood-ping" && a.OK && pong == 0:
				pong, beforePong = time.Since(pingAt), len(acked)
			}
		}
		seen = len(msgs)
		if len(acked) == n && pong > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	took := time.Since(start)
	st := d.up.Stats()
	outcomes := map[string]int{}
	for _, o := range acked {
		outcomes[o]++
	}
	open, finished := d.store.ReplyCounts()
	t.Logf("%d replies: online after %v, ping answered after %v (after %d reply acks), all acked after %v; outcomes %v; reconnects %d; open %d finished %d; "+
		"VmRSS %d→%d MB (max), RssAnon %d→%d MB (max), heap in use max %d MB",
		n, online.Round(time.Millisecond), pong.Round(time.Millisecond), beforePong, took.Round(time.Millisecond), outcomes, st.Reconnects, open, finished,
		rss0["VmRSS"]>>10, maxRSS>>10, rss0["RssAnon"]>>10, maxAnon>>10, maxHeap>>20)
	if pong == 0 || pong > 10*time.Second {
		t.Errorf("ping answered after %v (0: never), want within 10 s of being online", pong)
	}
	// Answered when received, not after the replies queued before it were
	// carried out (it was, and took minutes with 10,000).
	if beforePong >= n/2 {
		t.Errorf("ping answered after %d of %d reply acks, want it ahead of the backlog", beforePong, n)
	}
	if len(acked) != n {
		t.Fatalf("%d of %d replies acked within %v", len(acked), n, took)
	}
	if st.Reconnects != 0 {
		t.Errorf("%d reconnects while working through the backlog", st.Reconnects)
	}
	if open > buffer.MaxReplies {
		t.Errorf("%d replies open, cap %d", open, buffer.MaxReplies)
	}
	wantDropped := max(0, n-buffer.MaxReplies)
	if outcomes[protocol.OutcomeDropped] != wantDropped || outcomes[protocol.OutcomeHeld] != n-wantDropped {
		t.Errorf("outcomes %v, want %d dropped and %d held", outcomes, wantDropped, n-wantDropped)
	}
	// The backlog waits in the store, not in memory: what remains is
	// Badger's memtables (4 MiB each) and caches, and at most
	// maxAcceptBatch commands between paho and the inbox's next write.
	// (Before: 308 MB of heap with 10,000 replies held in memory; then 186
	// MB, 3,500 commands between paho and the inbox, which the broker's
	// in-flight window did not bound.) VmRSS also counts the pages of the
	// store's memory-mapped files, which the kernel reclaims under
	// pressure: RssAnon is the process's own memory.
	if maxHeap > 96<<20 {
		t.Errorf("heap in use reached %d MB", maxHeap>>20)
	}
	if grew := (maxAnon - rss0["RssAnon"]) >> 10; grew > 96 {
		t.Errorf("anonymous memory (RssAnon) grew by %d MB", grew)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
