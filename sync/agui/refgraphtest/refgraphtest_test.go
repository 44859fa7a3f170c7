package refgraphtest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/sync/agui/refgraphtest"
)

// runInput is a RunAgentInput as refgraph/README.md says the bridge sends it.
func runInput(thread, id, text string, notes []string) map[string]any {
	ctx := []map[string]string{}
	if notes != nil {
		type note struct {
			ID   string `json:"id"`
			Seq  int    `json:"seq"`
			Text string `json:"text"`
		}
		ns := make([]note, len(notes))
		for i, n := range notes {
			ns[i] = note{ID: id + "-n" + strconv.Itoa(i), Seq: i + 1, Text: n}
		}
		nj, _ := json.Marshal(ns)
		ctx = []map[string]string{
			{"description": "isOfflineBatch", "value": "true"},
			{"description": "messageCount", "value": strconv.Itoa(len(notes))},
			{"description": "notes", "value": string(nj)},
		}
	}
	return map[string]any{
		"threadId": thread, "runId": "run-" + id, "state": map[string]any{}, "tools": []any{}, "context": ctx,
		"messages":       []map[string]string{{"id": id, "role": "user", "content": text}},
		"forwardedProps": map[string]any{"interactionMode": "feedback", "deviceId": thread},
	}
}

type event struct {
	Type     string         `json:"type"`
	Delta    string         `json:"delta"`
	Message  string         `json:"message"`
	Snapshot map[string]any `json:"snapshot"`
}

// post runs one RunAgentInput and returns its events.
func post(t *testing.T, url string, in map[string]any) []event {
	t.Helper()
	body, _ := json.Marshal(in)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST: HTTP %d", resp.StatusCode)
	}
	var evs []event
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var e event
			if err := json.Unmarshal([]byte(data), &e); err != nil {
				t.Fatalf("bad event %q: %v", data, err)
			}
			evs = append(evs, e)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

func last(evs []event) (string, map[string]any) {
	var snap map[string]any
	for _, e := range evs {
		if e.Type == "STATE_SNAPSHOT" {
			snap = e.Snapshot
		}
	}
	if len(evs) == 0 {
		return "", snap
	}
	return evs[len(evs)-1].Type, snap
}

var notes = []string{"crack in the weld at frame four", "roest op de onderste balk", "missing fire stop in shaft B"}

func TestListenRoundRestartAndKill(t *testing.T) {
	g := refgraphtest.Start(t)
	ctx := context.Background()

	typ, st := last(post(t, g.URL(), runInput("dev-1", "b1", strings.Join(notes, "\n"), notes)))
	if typ != "RUN_FINISHED" || st["answered"] != false || len(st["message_buffer"].([]any)) != 3 {
		t.Fatalf("batch: last %s, state %v", typ, st)
	}
	// A crash right after the batch: what was checkpointed survives.
	g.Kill()
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	evs := post(t, g.URL(), runInput("dev-1", "u1", "what do you think?", nil))
	typ, st = last(evs)
	written, _ := st["final_written"].(string)
	if typ != "RUN_FINISHED" || st["answered"] != true {
		t.Fatalf("utterance: last %s, state %v", typ, st)
	}
	for _, n := range notes {
		if !strings.Contains(written, n) || !strings.Contains(st["buffer_context"].(string), n) {
			t.Errorf("note %q missing from answer %q / buffer_context", n, written)
		}
	}
	// A retried run (same runId) is a replay, not a second run.
	post(t, g.URL(), runInput("dev-1", "u1", "what do you think?", nil))
	g.Stop()
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	th, err := g.Thread(ctx, "dev-1")
	if err != nil {
		t.Fatal(err)
	}
	if th.RunsByMessage["b1"] != 1 || th.RunsByMessage["u1"] != 1 || th.AttemptsByMessage["u1"] != 2 {
		t.Errorf("runs %v attempts %v, want b1:1 u1:1 and u1 attempted twice", th.RunsByMessage, th.AttemptsByMessage)
	}
	if len(th.Runs) != 3 || th.Runs[0].Kind != "batch" || th.Runs[0].RunID != "run-b1" || !th.Runs[2].Replay {
		t.Errorf("run records %+v", th.Runs)
	}
	if th.FinalWritten != written || th.InteractionMode != "feedback" || len(th.MessageBuffer) != 0 {
		t.Errorf("thread state %+v", th)
	}
	all, err := g.Threads(ctx)
	if err != nil || all["dev-1"]["u1"] != 1 {
		t.Errorf("Threads: %v %v", all, err)
	}
	if _, err := g.Thread(ctx, "nobody"); !errors.Is(err, refgraphtest.ErrNoThread) {
		t.Errorf("unknown thread: %v, want ErrNoThread", err)
	}
}

func TestSwitches(t *testing.T) {
	g := refgraphtest.Start(t, refgraphtest.WithDelay(300*time.Millisecond), refgraphtest.WithRejectMarker("#poison"),
		refgraphtest.WithoutIdempotency())
	start := time.Now()
	evs := post(t, g.URL(), runInput("dev-2", "m1", "this is #poison", nil))
	if typ, _ := last(evs); typ != "RUN_ERROR" || !strings.Contains(evs[len(evs)-1].Message, "m1 rejected") {
		t.Fatalf("marked message: %+v", evs[len(evs)-1])
	}
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Errorf("run took %v with a 300 ms delay", el)
	}
	in := runInput("dev-2", "m2", "fine", nil)
	post(t, g.URL(), in)
	if typ, _ := last(post(t, g.URL(), in)); typ != "RUN_FINISHED" {
		t.Fatalf("m2: %s", typ)
	}
	th, err := g.Thread(context.Background(), "dev-2")
	if err != nil {
		t.Fatal(err)
	}
	// Without idempotency the same runId runs twice; the rejected run counts once.
	if th.RunsByMessage["m1"] != 1 || th.RunsByMessage["m2"] != 2 {
		t.Errorf("runs %v", th.RunsByMessage)
	}
}
