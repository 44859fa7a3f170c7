package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"
	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/agora/agorad/sync/bridge/fleetsim"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
)

// goMem reads the Go heap in use and the bytes allocated so far (MiB)
// from the bridge's /metrics.
func goMem(t *testing.T, addr string) (heapMiB, allocMiB float64) {
	t.Helper()
	m := promValues(t, addr)
	return m["go_memstats_heap_inuse_bytes"] / (1 << 20), m["go_memstats_alloc_bytes_total"] / (1 << 20)
}

// TestBatchJoinMemory (make test-fleet; issue 49 item 3, a measurement):
// what joining a complete batch and posting its run costs the bridge, for
// batches up to limits.max_batch_bytes (16 MiB). The join is not streamed:
// the kept parts are read back, decoded, joined and encoded into the run's
// JSON body in memory, so the cost grows with the batch; this records by
// how much (bytes allocated per batch, and the heap in use sampled every
// 20 ms while it is joined and run). It fails if a batch is not answered
// or the heap rises more than 16 times the batch's size (docs/bridge.md
// "Limits" states the measured factor).
func TestBatchJoinMemory(t *testing.T) {
	fleetOnly(t)
	broker := brokertest.Start(t)
	agent := shortAnswerGraph(t)
	metrics := freeAddr(t)
	br := fleetsim.NewProc("bridge", "", nil, binPath, "run", "--broker", broker.URL(), "--agui-url", agent.URL,
		"--state-dir", t.TempDir(), "--metrics", metrics, "--log-level", "error")
	if err := br.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(br.Stop)
	waitUntil(t, 15*time.Second, "the bridge's metrics", func() bool { h, _ := goMem(t, metrics); return h > 0 })
	coll, err := fleetsim.Collect(broker.URL(), "joinmem-collector")
	if err != nil {
		t.Fatal(err)
	}
	defer coll.Close()
	pub := paho.NewClient(paho.NewClientOptions().AddBroker(broker.URL()).SetClientID("joinmem-pub"))
	if tok := pub.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	defer pub.Disconnect(100)
	note := strings.Repeat("crack in the weld ", 250_000/18)
	type row struct {
		parts                   int
		mb                      float64
		heap0, peak, alloc, dur float64
	}
	var rows []row
	// A first batch, not measured: the bridge's start-up allocations
	// (Badger, the HTTP client) are not the join's.
	time.Sleep(2 * time.Second) // the bridge's subscription
	publishPart(t, pub, "jm-warm", "jm-warm", 1, 2, "warm")
	publishPart(t, pub, "jm-warm", "jm-warm", 2, 2, "up")
	waitUntil(t, time.Minute, "the warm-up batch", func() bool { _, ok := coll.AckAt("jm-warm"); return ok })
	time.Sleep(time.Second)
	for _, parts := range []int{2, 4, 16, 64} {
		dev, id := fmt.Sprintf("jm-%02d", parts), fmt.Sprintf("jm-batch-%02d", parts)
		for i := 1; i < parts; i++ { // all but the last: kept, nothing joined
			publishPart(t, pub, dev, id, i, parts, note)
		}
		time.Sleep(time.Second)
		heap0, alloc0 := goMem(t, metrics)
		peak := heap0
		start := time.Now()
		publishPart(t, pub, dev, id, parts, parts, note)
		for {
			h, _ := goMem(t, metrics)
			peak = max(peak, h)
			if _, ok := coll.AckAt(id); ok || time.Since(start) > 2*time.Minute {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		took := time.Since(start)
		_, alloc1 := goMem(t, metrics)
		handed := false // acked, not parked: the run was done
		if _, ok := coll.AckAt(id); ok {
			handed = true
			for _, c := range coll.Commands() {
				if c.Type == protocol.CmdParked && len(c.IDs) == 1 && c.IDs[0] == id {
					handed = false
					t.Logf("%s parked: %q", id, c.Reason)
				}
			}
		}
		if !handed {
			t.Errorf("batch of %d parts not handed over", parts)
		}
		rw := row{parts: parts, mb: float64(parts*len(note)) / 1e6, heap0: heap0, peak: peak, alloc: alloc1 - alloc0, dur: took.Seconds()}
		rows = append(rows, rw)
		t.Logf("%d parts (%.1f MB of notes): heap in use %.1f MiB before, peak %.1f MiB; %.1f MiB allocated; answered in %.1f s",
			parts, rw.mb, heap0, peak, rw.alloc, rw.dur)
	}
	t.Logf("| parts | notes (MB) | heap before / peak (MiB) | allocated by the join and run (MiB) | allocated / batch size |")
	t.Logf("|---|---|---|---|---|")
	for _, rw := range rows {
		t.Logf("| %d | %.1f | %.1f / %.1f | %.1f | %.1f |", rw.parts, rw.mb, rw.heap0, rw.peak, rw.alloc, rw.alloc*(1<<20)/(rw.mb*1e6))
	}
	for _, rw := range rows {
		if rise := rw.peak - rw.heap0; rise > 16*max(rw.mb, 1) {
			t.Errorf("joining %.1f MB took the heap up %.1f MiB", rw.mb, rise)
		}
	}
}

// shortAnswerGraph is an AG-UI endpoint that reads the whole run input,
// whatever its size, and answers one short sentence: the bridge's cost is
// then the join and the request, not the answer.
func shortAnswerGraph(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in types.RunAgentInput
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		send := func(e events.Event) {
			b, _ := e.ToJSON()
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
		mid, text := "msg-"+in.RunID, fmt.Sprintf("noted %d messages", len(in.Messages))
		send(events.NewRunStartedEvent(in.ThreadID, in.RunID))
		send(events.NewTextMessageStartEvent(mid))
		send(events.NewTextMessageContentEvent(mid, text))
		send(events.NewTextMessageEndEvent(mid))
		send(events.NewStateSnapshotEvent(map[string]any{"final_written": text}))
		send(events.NewRunFinishedEvent(in.ThreadID, in.RunID))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func publishPart(t *testing.T, pub paho.Client, dev, id string, i, of int, note string) {
	t.Helper()
	b, _ := json.Marshal(protocol.Batch{Envelope: protocol.Envelope{V: 1, Type: protocol.TypeBatch, ID: id, Seq: 1,
		DeviceID: dev, StoreID: "s", CreatedAt: protocol.FormatTime(time.Now())}, Count: 1,
		Items:   []protocol.Item{{ID: fmt.Sprintf("n%04d", i), Text: note, Lang: "en"}},
		Context: protocol.BatchContext{IsOfflineBatch: true, MessageCount: of}, Part: &protocol.BatchPart{Index: i, Of: of}})
	if tok := pub.Publish(protocol.Topic(dev, protocol.TopicBatches), 1, false, b); !tok.WaitTimeout(30*time.Second) || tok.Error() != nil {
		t.Fatalf("publish part %d: %v", i, tok.Error())
	}
}
