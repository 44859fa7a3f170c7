package bridge_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agora/agorad/sync/agui/aguitest"
	"github.com/agora/agorad/sync/bridge"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
)

// The device's real uplink → mosquitto → bridge → agent → reply and ack.
func TestDeviceRoundTrip(t *testing.T) {
	broker := brokertest.Start(t)
	agent := aguitest.Start()
	defer agent.Close()
	h := startBridge(t, broker.URL(), agent.URL, fastRetry, "")
	cmds := broker.Subscribe(t, "agora/v1/+/commands")
	dev := newDevice(t, "handheld-07", broker.URL(), true)

	e1 := dev.say(t, "what is the torque spec")
	dev.note(t, "crack in the weld at frame four")
	dev.note(t, "roest op de onderste balk")
	dev.note(t, "missing bolt on the north column")
	batch := dev.flush(t)
	e2 := dev.say(t, "AGORA what did I note")

	msgs, ok := cmds.WaitFor(15*time.Second, func(m []brokertest.Message) bool {
		c := commands(t, m)
		return count(c, "ack") >= 3 && count(c, "reply") >= 2
	})
	got := commands(t, msgs)
	if !ok {
		t.Fatalf("commands seen: %+v\nbridge log:\n%s", got, h.log.String())
	}
	// Runs in seq order on one thread, never overlapping.
	runs := agent.Runs()
	if len(runs) != 3 {
		t.Fatalf("%d runs, want 3", len(runs))
	}
	wantIDs := []string{e1.ID, batch.ID, e2.ID}
	for i, r := range runs {
		if r.RunID != "run-"+wantIDs[i] || r.Messages[0].ID != wantIDs[i] || r.ThreadID != "handheld-07" {
			t.Errorf("run %d: thread %s run %s message %s, want run %s", i, r.ThreadID, r.RunID, r.Messages[0].ID, wantIDs[i])
		}
	}
	// The batch in the web client's offline-replay shape.
	b := runs[1]
	ctx := map[string]string{}
	for _, c := range b.Context {
		ctx[c.Description] = c.Value
	}
	if ctx["isOfflineBatch"] != "true" || ctx["messageCount"] != "3" {
		t.Errorf("batch context %v", ctx)
	}
	text := aguitest.UserText(b)
	lines := strings.Split(text, "\n")
	if len(lines) != 3 || lines[0] != "crack in the weld at frame four" || lines[2] != "missing bolt on the north column" {
		t.Errorf("batch message %q", text)
	}
	if fp, _ := b.ForwardedProps.(map[string]any); fp["interactionMode"] != "feedback" || fp["deviceId"] != "handheld-07" {
		t.Errorf("batch forwardedProps %v", b.ForwardedProps)
	}
	// Replies only to the utterances, with in_reply_to; acks for all three.
	replies := map[string]command{}
	acked := map[string]bool{}
	for _, c := range got {
		if c.Topic != "agora/v1/handheld-07/commands" {
			t.Errorf("command on %s", c.Topic)
		}
		switch c.Type {
		case "reply":
			replies[c.InReplyTo] = c
		case "ack":
			for _, id := range c.IDs {
				acked[id] = true
			}
		}
	}
	if len(replies) != 2 || replies[e1.ID].Text != "echo: what is the torque spec" || replies[e2.ID].Lang != "en" {
		t.Errorf("replies %+v", replies)
	}
	if _, ok := replies[batch.ID]; ok {
		t.Errorf("a listen-mode batch got a reply")
	}
	for _, id := range wantIDs {
		if !acked[id] {
			t.Errorf("%s not acked", id)
		}
	}
	// The device deletes the batch only on the bridge's ack (batch_ack_required).
	waitFor(t, 10*time.Second, "device outbox empty", func() bool { n, _ := dev.store.OutboxCount(); return n == 0 })
	if agent.Overlaps() != 0 {
		t.Errorf("%d overlapping runs on one thread", agent.Overlaps())
	}
}

func TestDuplicateIsNotRunAgain(t *testing.T) {
	broker := brokertest.Start(t)
	agent := aguitest.Start()
	defer agent.Close()
	h := startBridge(t, broker.URL(), agent.URL, fastRetry, "")
	cmds := broker.Subscribe(t, "agora/v1/d1/commands")
	pub := publisher(t, broker.URL())
	id, p := utterance("d1", 1, "hello")
	publish(t, pub, "agora/v1/d1/utterances", p)
	publish(t, pub, "agora/v1/d1/utterances", p)
	msgs, _ := cmds.WaitFor(10*time.Second, func(m []brokertest.Message) bool { return count(commands(t, m), "ack") >= 2 })
	got := commands(t, msgs)
	if count(got, "ack") != 2 || len(agent.Runs()) != 1 {
		t.Fatalf("%d acks, %d runs; want 2 acks, 1 run: %+v", count(got, "ack"), len(agent.Runs()), got)
	}
	for _, c := range got {
		if c.Type == "reply" && c.ID != "reply-"+id {
			t.Errorf("reply id %s", c.ID)
		}
	}
	if v := testutil.ToFloat64(h.m.Messages.WithLabelValues("utterance", "duplicate")); v != 1 {
		t.Errorf("duplicates metric %v", v)
	}
	// One debug line per message with what became of it, without its words.
	logs := h.log.String()
	for _, outcome := range []string{"run", "duplicate"} {
		want := fmt.Sprintf("device=d1 id=%s seq=1 kind=utterance outcome=%s duration=", id, outcome)
		i := strings.Index(logs, want)
		if i < 0 {
			t.Errorf("log lacks %q:\n%s", want, logs)
			continue
		}
		// how long the message took to its outcome (a run: the agent's HTTP round trip)
		field := strings.Fields(logs[i+len(want):])[0]
		if d, err := time.ParseDuration(field); err != nil || d <= 0 {
			t.Errorf("%s: duration=%s, want a positive duration (%v)", outcome, field, err)
		}
	}
	if strings.Contains(logs, "hello") {
		t.Errorf("the log carries the message's text:\n%s", logs)
	}
	// A restart keeps the record: the same message is still a duplicate.
	h.stop()
	h2 := startBridge(t, broker.URL(), agent.URL, fastRetry, h.stateDir)
	publish(t, pub, "agora/v1/d1/utterances", p)
	waitFor(t, 10*time.Second, "third ack", func() bool { return count(commands(t, cmds.Messages()), "ack") >= 3 })
	if len(agent.Runs()) != 1 {
		t.Fatalf("run again after restart: %d runs", len(agent.Runs()))
	}
	_ = h2
}

func TestBadInput(t *testing.T) {
	broker := brokertest.Start(t)
	agent := aguitest.Start()
	defer agent.Close()
	h := startBridge(t, broker.URL(), agent.URL, fastRetry, "")
	cmds := broker.Subscribe(t, "agora/v1/+/commands")
	pub := publisher(t, broker.URL())
	_, other := utterance("other-device", 1, "I am someone else")
	_, good := utterance("d2", 5, "a real question")
	tests := []struct {
		name, topic, payload, reason string
	}{
		{"invalid json", "agora/v1/d2/utterances", `{"v":1,"type":"utt`, "json"},
		{"not json", "agora/v1/d2/batches", "\x00\x01garbage", "json"},
		{"invalid utf8", "agora/v1/d2/utterances", "{\"text\":\"\xff\xfe\"}", "utf8"},
		{"device mismatch", "agora/v1/d2/utterances", string(other), "device_mismatch"},
		{"wrong type", "agora/v1/d2/batches", string(good), "type"},
		{"wrong version", "agora/v1/d2/utterances", strings.Replace(string(good), `"v":1`, `"v":9`, 1), "version"},
		{"no id", "agora/v1/d2/utterances", strings.Replace(string(good), `"id":"`, `"id":"x `, 1), "id"},
		{"empty text", "agora/v1/d2/utterances", strings.Replace(string(good), `"text":"a real question"`, `"text":" "`, 1), "empty_text"},
		{"oversize", "agora/v1/d2/utterances", `{"x":"` + strings.Repeat("a", 300<<10) + `"}`, "oversize"},
		{"batch count", "agora/v1/d2/batches", `{"v":1,"type":"batch","id":"b1","seq":3,"device_id":"d2","count":2,"items":[]}`, "batch_count"},
	}
	for _, tt := range tests {
		publish(t, pub, tt.topic, []byte(tt.payload))
	}
	publish(t, pub, "agora/v1/d2/utterances", good)
	waitFor(t, 10*time.Second, "the good message's ack", func() bool { return count(commands(t, cmds.Messages()), "ack") >= 1 })
	for _, tt := range tests {
		if testutil.ToFloat64(h.m.BadInput.WithLabelValues(tt.reason)) < 1 {
			t.Errorf("%s: bad_input{reason=%s} not counted", tt.name, tt.reason)
		}
	}
	got := commands(t, cmds.Messages())
	for _, c := range got {
		if c.Topic != "agora/v1/d2/commands" {
			t.Errorf("command to %s after bad input", c.Topic)
		}
	}
	// Every refused message is kept whole as a dead letter (issue 27).
	dls, err := h.store.DeadLetters(0)
	if err != nil {
		t.Fatal(err)
	}
	parked := map[string]string{}
	for _, d := range dls {
		parked[string(d.Payload)] = d.Reason
	}
	for _, tt := range tests {
		if r, ok := parked[tt.payload]; !ok || !strings.HasPrefix(r, tt.reason) {
			t.Errorf("%s: parked %v with reason %q, want reason %s", tt.name, ok, r, tt.reason)
		}
	}
	if len(dls) != len(tests) {
		t.Errorf("%d dead letters, want %d", len(dls), len(tests))
	}
	if len(agent.Runs()) != 1 || aguitest.UserText(agent.Runs()[0]) != "a real question" {
		t.Errorf("runs: %d", len(agent.Runs()))
	}
	// Log excerpts are bounded.
	for _, line := range strings.Split(h.log.String(), "\n") {
		if len(line) > 2000 {
			t.Errorf("log line of %d bytes", len(line))
		}
	}
}

// A message the agent rejects is parked with its reason; the device's later
// messages go on. A broken or garbage stream for one device never produces a
// reply for another.
func TestRejectedIsParkedAndLaterGoOn(t *testing.T) {
	broker := brokertest.Start(t)
	agent := aguitest.Start()
	defer agent.Close()
	agent.SetBehaviour(func(in types.RunAgentInput) *aguitest.Answer {
		switch aguitest.UserText(in) {
		case "reject me":
			return &aguitest.Answer{RunErr: "validation failed: no such inspection"}
		case "garbage stream":
			return &aguitest.Answer{Raw: true, Body: "data: {\"type\":\"RUN_STARTED\"}\n\ndata: <html>oops\n\n"}
		case "broken stream":
			return &aguitest.Answer{Raw: true, Body: "data: {\"type\":\"RUN_STARTED\"}\n\ndata: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"half\"}\n\n"}
		}
		return nil
	})
	retry := fastRetry
	retry.MaxElapsed = 500 * time.Millisecond
	h := startBridge(t, broker.URL(), agent.URL, retry, "")
	cmds := broker.Subscribe(t, "agora/v1/+/commands")
	pub := publisher(t, broker.URL())
	bad, p1 := utterance("d3", 1, "reject me")
	_, p2 := utterance("d3", 2, "after the rejected one")
	g, p3 := utterance("d4", 1, "garbage stream")
	k, p4 := utterance("d5", 1, "broken stream")
	_, p5 := utterance("d4", 2, "fine for d4")
	for _, m := range []struct {
		topic string
		p     []byte
	}{{"agora/v1/d3/utterances", p1}, {"agora/v1/d3/utterances", p2}, {"agora/v1/d4/utterances", p3},
		{"agora/v1/d5/utterances", p4}, {"agora/v1/d4/utterances", p5}} {
		publish(t, pub, m.topic, m.p)
	}
	msgs, ok := cmds.WaitFor(15*time.Second, func(m []brokertest.Message) bool { return count(commands(t, m), "ack") >= 5 })
	if !ok {
		t.Fatalf("acks: %+v\n%s", commands(t, msgs), h.log.String())
	}
	replies := map[string]command{}
	for _, c := range commands(t, msgs) {
		if c.Type == "reply" {
			replies[c.Topic+" "+c.Text] = c
		}
	}
	want := map[string]bool{"agora/v1/d3/commands echo: after the rejected one": true, "agora/v1/d4/commands echo: fine for d4": true}
	if len(replies) != len(want) {
		t.Errorf("replies %v", replies)
	}
	for k := range want {
		if _, ok := replies[k]; !ok {
			t.Errorf("missing reply %q", k)
		}
	}
	dls, err := h.store.DeadLetters(0)
	if err != nil {
		t.Fatal(err)
	}
	parked := map[string]string{}
	for _, d := range dls {
		parked[d.ID] = d.Reason
	}
	if len(parked) != 3 || !strings.Contains(parked[bad], "no such inspection") || parked[g] == "" || parked[k] == "" {
		t.Errorf("dead letters %v", parked)
	}
	if testutil.ToFloat64(h.m.Parked) != 3 || testutil.ToFloat64(h.m.BadInput.WithLabelValues("agui_garbage")) < 1 ||
		testutil.ToFloat64(h.m.BadInput.WithLabelValues("agui_stream")) < 1 {
		t.Errorf("metrics: parked %v garbage %v stream %v", testutil.ToFloat64(h.m.Parked),
			testutil.ToFloat64(h.m.BadInput.WithLabelValues("agui_garbage")), testutil.ToFloat64(h.m.BadInput.WithLabelValues("agui_stream")))
	}
	if !strings.Contains(h.log.String(), "message parked as a dead letter") {
		t.Errorf("no park log")
	}
	// Each parked message is reported to its device (parked, then the ack
	// for devices that do not know parked); the others are not.
	notices := map[string]int{} // id -> index of its parked command
	for i, c := range commands(t, msgs) {
		switch c.Type {
		case protocol.CmdParked:
			if len(c.IDs) != 1 || c.Reason != parked[c.IDs[0]] || c.ID != "parked-"+c.IDs[0] {
				t.Errorf("parked command %+v, want the reason %q", c, parked[c.IDs[0]])
			}
			notices[c.IDs[0]] = i
		case protocol.CmdAck:
			if at, ok := notices[c.IDs[0]]; ok && at > i {
				t.Errorf("ack of %s before its parked command", c.IDs[0])
			}
		}
	}
	if len(notices) != 3 {
		t.Errorf("parked commands for %v, want the 3 parked messages %v", notices, parked)
	}
	for id := range notices {
		if _, ok := parked[id]; !ok {
			t.Errorf("parked command for %s, which ran", id)
		}
	}
}

// The agent down for a while: nothing lost, runs resume in order; a slow
// device does not hold up the others.
func TestAgentDownThenBack(t *testing.T) {
	broker := brokertest.Start(t)
	agent := aguitest.Start()
	defer agent.Close()
	down := make(chan struct{})
	agent.SetBehaviour(func(in types.RunAgentInput) *aguitest.Answer {
		select {
		case <-down:
			return nil
		default:
			return &aguitest.Answer{Status: 503, Body: "graph restarting"}
		}
	})
	retry := fastRetry
	retry.MaxElapsed = time.Minute
	startBridge(t, broker.URL(), agent.URL, retry, "")
	cmds := broker.Subscribe(t, "agora/v1/+/commands")
	pub := publisher(t, broker.URL())
	want := map[string][]string{}
	for i := range 5 {
		for _, d := range []string{"a", "b", "c"} {
			id, p := utterance(d, uint64(i+1), "q")
			want[d] = append(want[d], bridge.RunID(id))
			publish(t, pub, "agora/v1/"+d+"/utterances", p)
		}
	}
	time.Sleep(time.Second)
	if n := count(commands(t, cmds.Messages()), "ack"); n != 0 {
		t.Fatalf("%d acks while the agent was down", n)
	}
	close(down)
	msgs, ok := cmds.WaitFor(20*time.Second, func(m []brokertest.Message) bool { return count(commands(t, m), "ack") >= 15 })
	if !ok {
		t.Fatalf("only %d acks", count(commands(t, msgs), "ack"))
	}
	got := map[string][]string{}
	for _, r := range agent.Runs() {
		fp := r.ForwardedProps.(map[string]any)
		d := fp["deviceId"].(string)
		if n := len(got[d]); n > 0 && got[d][n-1] == r.RunID {
			continue // a retried attempt
		}
		got[d] = append(got[d], r.RunID)
	}
	for d, ids := range want {
		if strings.Join(got[d], ",") != strings.Join(ids, ",") {
			t.Errorf("device %s: runs %v, want %v", d, got[d], ids)
		}
	}
}

func TestSlowDeviceDoesNotBlockOthers(t *testing.T) {
	broker := brokertest.Start(t)
	agent := aguitest.Start()
	defer agent.Close()
	release := make(chan struct{})
	agent.SetBehaviour(func(in types.RunAgentInput) *aguitest.Answer {
		if aguitest.UserText(in) == "slow" {
			<-release
		}
		return nil
	})
	defer close(release)
	startBridge(t, broker.URL(), agent.URL, fastRetry, "")
	cmds := broker.Subscribe(t, "agora/v1/fast/commands")
	pub := publisher(t, broker.URL())
	_, p := utterance("slowdev", 1, "slow")
	publish(t, pub, "agora/v1/slowdev/utterances", p)
	for i := range 3 {
		_, p := utterance("fast", uint64(i+1), "quick")
		publish(t, pub, "agora/v1/fast/utterances", p)
	}
	if _, ok := cmds.WaitFor(10*time.Second, func(m []brokertest.Message) bool { return count(commands(t, m), "ack") >= 3 }); !ok {
		t.Fatal("a slow device held up another")
	}
}

func TestStatusKeepsOnlineAndMode(t *testing.T) {
	broker := brokertest.Start(t)
	agent := aguitest.Start()
	defer agent.Close()
	h := startBridge(t, broker.URL(), agent.URL, fastRetry, "")
	dev := newDevice(t, "hs-1", broker.URL(), false)
	waitFor(t, 10*time.Second, "online status", func() bool {
		ds, _ := h.store.Device("hs-1")
		return ds.Online && ds.Mode == "feedback"
	})
	if testutil.ToFloat64(h.m.Online.WithLabelValues("hs-1")) != 1 {
		t.Error("online gauge")
	}
	dev.stop() // the device says goodbye: retained online:false
	waitFor(t, 10*time.Second, "offline status", func() bool {
		ds, _ := h.store.Device("hs-1")
		return !ds.Online
	})
	if testutil.ToFloat64(h.m.Online.WithLabelValues("hs-1")) != 0 {
		t.Error("online gauge after goodbye")
	}
	// A last will says only "offline": the mode stays the last known.
	stored := h.m.Messages.WithLabelValues("status", "stored")
	before := testutil.ToFloat64(stored)
	_, will, err := protocol.RenderWill("hs-1", "will-1", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	publish(t, publisher(t, broker.URL()), "agora/v1/hs-1/status", will)
	waitFor(t, 10*time.Second, "the will stored", func() bool { return testutil.ToFloat64(stored) > before })
	if ds, _ := h.store.Device("hs-1"); ds.Mode != "feedback" || ds.Online {
		t.Errorf("after the last will: mode %q online %v, want feedback (the last known), offline", ds.Mode, ds.Online)
	}
}
