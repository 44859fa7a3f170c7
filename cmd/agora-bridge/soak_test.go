package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/agora/agorad/sync/bridge"
	"github.com/agora/agorad/sync/bridge/fleetsim"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
)

// hangingGraph passes every run to the graph behind it except those of
// one thread, which it holds until the run is cancelled (the bridge's run
// timeout): a device whose runs hang.
func hangingGraph(t *testing.T, target, thread string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	proxy.FlushInterval = -1 // SSE
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"threadId":"`+thread+`"`)) {
			<-r.Context().Done()
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + u.Path
}

// promValues reads the bridge's /metrics (plain gauges and counters, no
// labels); nil when it cannot be read yet (the callers wait for it).
func promValues(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 {
			if v, err := strconv.ParseFloat(f[1], 64); err == nil {
				out[f[0]] = v
			}
		}
	}
	return out
}

// scrape is the bridge's RSS, goroutines and Go heap in use, from its
// /metrics.
func scrape(t *testing.T, addr string) (rssMiB float64, goroutines int, heapMiB float64) {
	t.Helper()
	m := promValues(t, addr)
	return m["process_resident_memory_bytes"] / (1 << 20), int(m["go_goroutines"]), m["go_memstats_heap_inuse_bytes"] / (1 << 20)
}

// TestFleetSoakHostile (make test-fleet, issue 49): one mosquitto-mode
// agora-bridge process against the reference graph, rounds of: thousands
// of device ids seen once (malformed messages), honest devices asking one
// question each, a device whose runs hang with 1,100 messages, devices that
// send part 1 of a batch and never the rest, and a forged far-future seq on
// an honest device. Every honest device is answered (the forged one's next
// real message too), and after each round the bridge's RSS and goroutines
// come back down (measured from its /metrics).
func TestFleetSoakHostile(t *testing.T) { soakHostile(t, false) }

// TestFleetSoakHostileNATS is the same soak in fleet mode: the devices talk
// MQTT to nats-server, the bridge consumes JetStream partitions (8, so the
// hanging device shares its partition with an eighth of the others) and
// keeps its state in the KV bucket.
func TestFleetSoakHostileNATS(t *testing.T) { soakHostile(t, true) }

func soakHostile(t *testing.T, fleet bool) {
	fleetOnly(t)
	var (
		rounds    = envInt("AGORA_SOAK_ROUNDS", 5)
		strangers = envInt("AGORA_SOAK_STRANGERS", 3000)
		honest    = envInt("AGORA_SOAK_HONEST", 300)
		hung      = envInt("AGORA_SOAK_HUNG", 1100)
		partial   = envInt("AGORA_SOAK_PARTIAL", 200)
	)
	const partitions = 8
	var brokerURL string
	var modeArgs []string
	modeCfg := ""
	var deadLetters func() ([]bridge.DeadLetter, error)
	state := t.TempDir()
	if fleet {
		n := brokertest.StartNATS(t, partitions)
		brokerURL = n.MQTTURL()
		modeArgs = []string{"--nats", n.URL(), "--partitions", strconv.Itoa(partitions)}
		// device_hold: the hanging device's run frees its partition
		// after 2 s (its messages wait in its backlog).
		modeCfg = "jetstream:\n  ack_wait: 5s\n  device_hold: 2s\n"
		deadLetters = func() ([]bridge.DeadLetter, error) {
			js, err := bridge.ConnectJetStream(bridge.JetStreamOptions{URL: n.URL(), Partitions: partitions,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				return nil, err
			}
			defer js.Close()
			return js.Store().DeadLetters(0)
		}
	} else {
		broker := brokertest.Start(t)
		brokerURL = broker.URL()
		// Listed while the bridge runs (the dead letter files).
		deadLetters = func() ([]bridge.DeadLetter, error) { return bridge.ReadDeadLetterFiles(state, 0) }
	}
	g := startGraph(t)
	agentURL := hangingGraph(t, g.url, "hang")
	cfg := filepath.Join(t.TempDir(), "bridge.yaml")
	// agent.timeout bounds the hanging device's runs (each attempt) and
	// leaves honest runs on a loaded machine their time; max_elapsed parks
	// a hanging message after its first attempt.
	os.WriteFile(cfg, []byte(modeCfg+"agent:\n  timeout: 30s\nretry:\n  initial: 200ms\n  max: 1s\n  max_elapsed: 2s\n"+
		"limits:\n  part_ttl: 5s\n  worker_idle: 2s\nmetrics:\n  per_device: false\n"), 0o600)
	metrics := freeAddr(t)
	args := append([]string{binPath, "run", "-c", cfg, "--broker", brokerURL, "--agui-url", agentURL,
		"--state-dir", state, "--metrics", metrics, "--log-level", "error"}, modeArgs...)
	br := fleetsim.NewProc("bridge", "", nil, args...)
	if err := br.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(br.Stop)
	waitUntil(t, 15*time.Second, "the bridge's metrics", func() bool { _, n, _ := scrape(t, metrics); return n > 0 })
	time.Sleep(500 * time.Millisecond)
	coll, err := fleetsim.Collect(brokerURL, "soak-collector")
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	pub := paho.NewClient(paho.NewClientOptions().AddBroker(brokerURL).SetClientID("soak-pub").SetMaxResumePubInFlight(1000))
	if tok := pub.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	defer pub.Disconnect(100)
	send := func(topic string, payload []byte) paho.Token { return pub.Publish(topic, 1, false, payload) }
	waitAll := func(toks []paho.Token) {
		for _, tok := range toks {
			if !tok.WaitTimeout(30*time.Second) || tok.Error() != nil {
				t.Fatalf("publish: %v", tok.Error())
			}
		}
	}
	utt := func(dev, id string, seq uint64) []byte {
		b, _ := json.Marshal(protocol.Utterance{Envelope: protocol.Envelope{V: 1, Type: protocol.TypeUtterance, ID: id, Seq: seq,
			DeviceID: dev, StoreID: "s-" + dev, CreatedAt: protocol.FormatTime(time.Now())}, Text: "is the weld at frame " + id + " done", Lang: "en"})
		return b
	}
	part := func(dev, id string) []byte {
		b, _ := json.Marshal(protocol.Batch{Envelope: protocol.Envelope{V: 1, Type: protocol.TypeBatch, ID: id, Seq: 1,
			DeviceID: dev, StoreID: "s-" + dev, CreatedAt: protocol.FormatTime(time.Now())}, Count: 1,
			Items:   []protocol.Item{{ID: id + "-n", Text: strings.Repeat("note ", 1000), Lang: "en"}},
			Context: protocol.BatchContext{IsOfflineBatch: true, MessageCount: 2}, Part: &protocol.BatchPart{Index: 1, Of: 2}})
		return b
	}
	// One question first: the graph's first run is slow (imports, caches).
	if tok := send(protocol.Topic("warmup", protocol.TopicUtterances), utt("warmup", "warmup-q", 1)); !tok.WaitTimeout(10 * time.Second) {
		t.Fatal("publish warm-up")
	}
	waitUntil(t, 2*time.Minute, "the warm-up answer", func() bool { _, ok := coll.Reply("warmup-q"); return ok })
	rss0, gr0, _ := scrape(t, metrics)
	t.Logf("start: RSS %.1f MiB, %d goroutines", rss0, gr0)
	type row struct {
		round                      int
		peakRSS, afterRSS          float64
		peakGr, afterGr            int
		answered, honest           int
		answerP50, answerMax       time.Duration
		incompleteParked, forgedOK int
		afterHeap, stateMiB        float64
	}
	var rows []row
	var seq uint64 // the hanging device's
	for r := 1; r <= rounds; r++ {
		start := time.Now()
		var toks []paho.Token
		// The hanging device first: its backlog is behind everyone.
		for range hung {
			seq++
			toks = append(toks, send(protocol.Topic("hang", protocol.TopicUtterances), utt("hang", fmt.Sprintf("hang-%07d", seq), seq)))
		}
		for i := range strangers {
			toks = append(toks, send(fmt.Sprintf("agora/v1/stranger-%d-%05d/events", r, i), []byte(`{}`)))
		}
		for i := range partial {
			dev := fmt.Sprintf("partial-%d-%04d", r, i)
			toks = append(toks, send(protocol.Topic(dev, protocol.TopicBatches), part(dev, dev+"-b")))
		}
		// The forged seq on honest device 0, before its real message.
		forgedDev := fmt.Sprintf("honest-%d-0000", r)
		toks = append(toks, send(protocol.Topic(forgedDev, protocol.TopicUtterances), utt(forgedDev, forgedDev+"-real0", 1)))
		toks = append(toks, send(protocol.Topic(forgedDev, protocol.TopicUtterances), utt(forgedDev, forgedDev+"-forged", 999999999)))
		sentAt := map[string]time.Time{}
		for i := range honest {
			dev := fmt.Sprintf("honest-%d-%04d", r, i)
			id := dev + "-q"
			sentAt[id] = time.Now()
			toks = append(toks, send(protocol.Topic(dev, protocol.TopicUtterances), utt(dev, id, 2)))
		}
		waitAll(toks)
		var peakRSS float64
		var peakGr int
		var answers []time.Duration
		deadline := time.Now().Add(3 * time.Minute)
		for {
			rss, n, _ := scrape(t, metrics)
			peakRSS, peakGr = max(peakRSS, rss), max(peakGr, n)
			answers = answers[:0]
			for id, at := range sentAt {
				if reply, ok := coll.Reply(id); ok {
					answers = append(answers, reply.At.Sub(at))
				}
			}
			if len(answers) == len(sentAt) || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		// Quiet: the workers end (worker_idle 2s), the parts expire
		// (part_ttl 5s); the hanging device's backlog is still there.
		time.Sleep(12 * time.Second)
		rss, n, heap := scrape(t, metrics)
		stateMiB := dirMiB(state) // mosquitto mode's Badger; fleet mode keeps its state in nats-server
		incomplete := 0
		dls, err := deadLetters()
		if err != nil {
			t.Fatal(err)
		}
		for _, dl := range dls {
			if strings.HasPrefix(dl.Reason, "batch_incomplete") && strings.HasPrefix(dl.ID, fmt.Sprintf("expired-partial-%d-", r)) {
				incomplete++
			}
		}
		forgedOK := 0
		if _, ok := coll.Reply(forgedDev + "-q"); ok {
			forgedOK = 1
		}
		rw := row{round: r, peakRSS: peakRSS, afterRSS: rss, peakGr: peakGr, afterGr: n, answered: len(answers), honest: honest,
			answerP50: fleetsim.Percentile(answers, 50), answerMax: fleetsim.Percentile(answers, 100), incompleteParked: incomplete, forgedOK: forgedOK, afterHeap: heap, stateMiB: stateMiB}
		rows = append(rows, rw)
		t.Logf("round %d (%v): honest answered %d/%d (p50 %v, max %v); incomplete batches expired %d/%d; forged device's next answered %d; RSS peak %.1f after %.1f MiB (Go heap %.1f, state on disk %.1f); goroutines peak %d after %d",
			r, time.Since(start).Round(time.Second), rw.answered, honest, rw.answerP50.Round(time.Millisecond), rw.answerMax.Round(time.Millisecond),
			incomplete, partial, forgedOK, peakRSS, rss, heap, stateMiB, peakGr, n)
		if rw.answered != honest {
			t.Errorf("round %d: %d of %d honest devices answered", r, rw.answered, honest)
		}
		if incomplete != partial {
			t.Errorf("round %d: %d of %d incomplete batches expired into dead letters", r, incomplete, partial)
		}
		if forgedOK != 1 {
			t.Errorf("round %d: the forged device's real message was not answered", r)
		}
	}
	// Flat: what stays after a round is the process's own goroutines, two
	// per pooled connection to the graph (at most one per run in flight,
	// agent.max_concurrent_runs 64; idle ones close after 90 s) and the
	// hanging device's worker, never one per device id seen.
	for _, rw := range rows {
		if rw.afterGr > gr0+2*64+20 {
			t.Errorf("round %d: %d goroutines after the round, %d at the start: not flat", rw.round, rw.afterGr, gr0)
		}
	}
	last := rows[len(rows)-1]
	if last.afterRSS > rows[0].afterRSS*1.5+20 {
		t.Errorf("RSS after the rounds: %.1f MiB, after the first %.1f: not flat", last.afterRSS, rows[0].afterRSS)
	}
	if dls, err := deadLetters(); err == nil {
		t.Logf("%d dead letters", len(dls))
	}
	t.Logf("| round | honest answered | answer p50 / max | incomplete batches expired | forged device answered | RSS peak / after (MiB) | Go heap after (MiB) | state on disk (MiB) | goroutines peak / after |")
	t.Logf("|---|---|---|---|---|---|---|---|---|")
	for _, rw := range rows {
		t.Logf("| %d | %d/%d | %v / %v | %d/%d | %d | %.1f / %.1f | %.1f | %.1f | %d / %d |", rw.round, rw.answered, rw.honest,
			rw.answerP50.Round(100*time.Millisecond), rw.answerMax.Round(100*time.Millisecond), rw.incompleteParked, partial,
			rw.forgedOK, rw.peakRSS, rw.afterRSS, rw.afterHeap, rw.stateMiB, rw.peakGr, rw.afterGr)
	}
}

// dirMiB is the disk space the files under dir take (blocks, as du: Badger
// preallocates sparse files).
func dirMiB(dir string) float64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, ierr := d.Info(); ierr == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok {
					n += st.Blocks * 512
				}
			}
		}
		return nil // a file gone meanwhile (compaction) is not counted
	})
	return float64(n) / (1 << 20)
}

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Issue 49: the largest batch the protocol allows (1,024 parts of about
// 250 KB) took the bridge to 4.2 GB joining it, then failed and was
// retried. Its parts are counted as they come: past limits.max_batch_bytes
// (16 MiB) the batch is parked whole at once and never joined, and the
// bridge's RSS stays small. 80 parts in `make test`, all 1,024 in
// `make test-fleet`.
func TestHugeBatchParkedBounded(t *testing.T) {
	parts := 80
	if os.Getenv("AGORA_FLEET") != "" {
		parts = protocol.MaxParts
	}
	broker := brokertest.Start(t)
	g := startGraph(t)
	metrics := freeAddr(t)
	br := fleetsim.NewProc("bridge", "", nil, binPath, "run", "--broker", broker.URL(), "--agui-url", g.url,
		"--state-dir", t.TempDir(), "--metrics", metrics, "--log-level", "error")
	if err := br.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(br.Stop)
	waitUntil(t, 15*time.Second, "the bridge's metrics", func() bool { _, n, _ := scrape(t, metrics); return n > 0 })
	time.Sleep(500 * time.Millisecond)
	coll, err := fleetsim.Collect(broker.URL(), "huge-collector")
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	pub := paho.NewClient(paho.NewClientOptions().AddBroker(broker.URL()).SetClientID("huge-pub"))
	if tok := pub.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	defer pub.Disconnect(100)
	const dev, id = "huge", "huge-batch"
	note := strings.Repeat("crack in the weld ", 250_000/18)
	rss0, _, heap := scrape(t, metrics)
	peak := rss0
	start := time.Now()
	for i := 1; i <= parts; i++ {
		b, _ := json.Marshal(protocol.Batch{Envelope: protocol.Envelope{V: 1, Type: protocol.TypeBatch, ID: id, Seq: 1,
			DeviceID: dev, StoreID: "s", CreatedAt: protocol.FormatTime(time.Now())}, Count: 1,
			Items:   []protocol.Item{{ID: fmt.Sprintf("n%04d", i), Text: note, Lang: "en"}},
			Context: protocol.BatchContext{IsOfflineBatch: true, MessageCount: parts}, Part: &protocol.BatchPart{Index: i, Of: parts}})
		if tok := pub.Publish(protocol.Topic(dev, protocol.TopicBatches), 1, false, b); !tok.WaitTimeout(30*time.Second) || tok.Error() != nil {
			t.Fatalf("publish part %d: %v", i, tok.Error())
		}
		if i%20 == 0 {
			rss, _, h := scrape(t, metrics)
			peak, heap = max(peak, rss), max(heap, h)
		}
	}
	waitUntil(t, 2*time.Minute, "the batch's ack", func() bool { _, ok := coll.AckAt(id); return ok })
	rss, _, h := scrape(t, metrics)
	peak, heap = max(peak, rss), max(heap, h)
	var reason string
	for _, c := range coll.Commands() {
		if c.Type == protocol.CmdParked && len(c.IDs) == 1 && c.IDs[0] == id {
			reason = c.Reason
		}
	}
	t.Logf("%d parts of %d bytes in %v: RSS %.1f MiB before, peak %.1f MiB (Go heap in use peak %.1f MiB); parked: %q", parts, len(note),
		time.Since(start).Round(time.Second), rss0, peak, heap, reason)
	if !strings.HasPrefix(reason, "batch_too_large") {
		t.Errorf("the batch was not parked as batch_too_large: %q", reason)
	}
	if _, ok := coll.Reply(id); ok {
		t.Errorf("the batch was run")
	}
	// Bounded, not small: the parts kept (max_batch_bytes) and their dead
	// letter are in memory while it is committed, and the parts behind
	// them wait in the device's backlog (max_backlog_bytes, in Badger's
	// memory-mapped value log).
	if peak > 512 || heap > 256 {
		t.Errorf("bridge RSS peaked at %.1f MiB, Go heap at %.1f MiB", peak, heap)
	}
}
