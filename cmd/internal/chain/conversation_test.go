package chain

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/sync/brokertest"
)

// repoRoot is the repository this package is in.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// buildChain builds agorad, agoractl and agora-bridge into one directory.
func buildChain(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range []string{"agorad", "agoractl", "agora-bridge"} {
		if b, err := exec.Command("go", "build", "-o", filepath.Join(dir, p), "github.com/agora/agorad/cmd/"+p).CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", p, err, b)
		}
	}
	return dir
}

// startChain starts the whole chain with the real tiny.en, the spotter
// and the test Silero model, or skips saying what is missing.
func startChain(t *testing.T, graphEnv ...string) *Chain {
	t.Helper()
	if _, err := os.Stat(brokertest.Binary); err != nil {
		t.Skipf("mosquitto not installed (%s)", brokertest.Binary)
	}
	if _, err := exec.LookPath("espeak-ng"); err != nil {
		t.Skip("espeak-ng not installed: no speech to say")
	}
	model := testaudio.RealModel(t, "tiny.en")
	kws := testaudio.SpotterDir(t)
	root := repoRoot(t)
	c, err := Start(t.Context(), Options{Root: root, BinDir: buildChain(t), Dir: t.TempDir(), Whisper: model,
		VAD: testaudio.Model(t, "for-tests-silero-v6.2.0-ggml.bin"), ModelsDir: filepath.Dir(kws),
		GraphEnv: graphEnv, Progress: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	c.Narrate(t.Context(), func(s string) { t.Log(s) })
	return c
}

// TestSpokenConversation is issue 22's whole conversation, every part real:
// the paced FIFO microphone speaks three notes in listen mode, "Hey Agora,
// ..." and "Agora, listen." into agorad (PortAudio, Silero, the real
// tiny.en and keyword spotter), mosquitto, the built agora-bridge, the
// reference graph under uvicorn, and the answer back through espeak-ng to
// the ALSA file speaker. The batch and the question reach the graph once
// each, in order, the notes reach the answer through buffer_context, the
// answer is spoken and acknowledged spoken, the bridge confirms every entry
// (mqtt.delivery: backend: the outbox empties) and the device listens again.
func TestSpokenConversation(t *testing.T) {
	if testing.Short() {
		t.Skip("the whole chain with real weights at real time: a few minutes")
	}
	c := startChain(t)
	steps := sayRound(t, c, Inspection)
	checkRound(t, c, steps, false)
}

// sayRound says lines one by one, each after the last one's effect.
func sayRound(t *testing.T, c *Chain, lines []Line) []Step {
	t.Helper()
	var steps []Step
	for _, l := range lines {
		st, err := c.SayLine(t.Context(), l)
		if err != nil {
			t.Fatalf("%v\n%s", err, c.Logs())
		}
		t.Logf("%q heard as %q; effect %.1f s after the end of speech", l.Text, st.Heard, st.Done.Sub(st.End).Seconds())
		steps = append(steps, st)
	}
	return steps
}

// checkRound checks an Inspection round end to end: the batch then the
// question reached the graph once each, in order, (offline: both marked
// produced without a broker), the notes reached the answer through
// buffer_context, the answer was spoken once and acknowledged spoken, the
// bridge confirmed every entry and the device listens again.
func checkRound(t *testing.T, c *Chain, steps []Step, offline bool) {
	t.Helper()
	ctx := t.Context()
	fin, err := c.Settle(ctx, time.Minute)
	if err != nil {
		t.Fatalf("outbox %d, unconfirmed %d a minute after the round: the bridge did not confirm every entry: %v\n%s", fin.Outbox, fin.Unconfirmed, err, c.Logs())
	}
	if fin.Mode != "listen" || fin.Buffered != 0 {
		t.Errorf("at the end: mode %s with %d notes buffered, want listen with none", fin.Mode, fin.Buffered)
	}

	// What the device sent: the batch of the notes, then the question;
	// nothing for "Agora, listen.".
	sent := c.Bus.Sent()
	if len(sent) != 2 || sent[0].Kind != "batch" || sent[1].Kind != "utterance" || sent[0].Seq >= sent[1].Seq {
		t.Fatalf("the device sent %+v, want the batch then the question\n%s", sent, c.Logs())
	}
	batch, question := sent[0], sent[1]
	if batch.Offline != offline || question.Offline != offline {
		t.Errorf("batch offline %v, question offline %v, want %v", batch.Offline, question.Offline, offline)
	}
	notes := []string{steps[0].Heard, steps[1].Heard, steps[2].Heard}
	// The batch is the notes in order, then the words said before the name
	// in the wake sentence, if whisper wrote any ("Hey, uh,").
	if len(batch.Texts) < 3 || strings.Join(batch.Texts[:3], "\n") != strings.Join(notes, "\n") {
		t.Errorf("batch %q, want the notes %q first", batch.Texts, notes)
	}
	wakeHeard := strings.ToLower(steps[3].Heard)
	for _, extra := range batch.Texts[min(3, len(batch.Texts)):] {
		if !strings.HasPrefix(wakeHeard, strings.ToLower(strings.TrimRight(extra, ",. "))) {
			t.Errorf("batch item %q is neither a note nor the start of the wake sentence %q", extra, steps[3].Heard)
		}
	}
	if q := strings.ToLower(question.Texts[0]); !strings.Contains(q, "write in the report") || strings.Contains(q, "gora") {
		t.Errorf("question %q: want the words after the name", question.Texts[0])
	}

	// The graph ran each once, in order; the notes reached the answer
	// through buffer_context (the echo model repeats its system prompt)
	// and stay in report_notes.
	th, err := c.Graph.Thread(c.Opts.DeviceID)
	if err != nil {
		t.Fatal(err)
	}
	runs, _ := th["runs"].([]any)
	var order []string
	for _, r := range runs {
		m := r.(map[string]any)
		if replay, _ := m["replay"].(bool); replay { // a retry answered from the graph's record
			t.Logf("graph replayed %s %s", m["kind"], m["message_id"])
			continue
		}
		order = append(order, m["kind"].(string)+":"+m["message_id"].(string))
	}
	if want := []string{"batch:" + batch.ID, "utterance:" + question.ID}; strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("graph runs %v, want %v", order, want)
	}
	for id, n := range th["runs_by_message"].(map[string]any) {
		if n.(float64) != 1 {
			t.Errorf("message %s ran %v times in the graph", id, n)
		}
	}
	rn, _ := json.Marshal(th["report_notes"])
	replies := c.Bus.Replies()
	if len(replies) == 0 || replies[0].InReplyTo != question.ID {
		t.Fatalf("replies %+v, want one, to the question %s", replies, question.ID)
	}
	for _, r := range replies[1:] { // a redelivery of the same reply is fine: the device acks it once
		if r.ID != replies[0].ID {
			t.Fatalf("replies %+v, want one, to the question %s", replies, question.ID)
		}
	}
	for _, n := range notes {
		if !strings.Contains(replies[0].Text, n) || !strings.Contains(string(rn), n) {
			t.Errorf("note %q missing from the answer %q or from report_notes %s", n, replies[0].Text, rn)
		}
	}

	// Spoken once, acknowledged spoken, and loud in the speaker: as long
	// as espeak-ng's own rendering of the text at the configured rate.
	var outcomes []string
	for _, o := range c.Bus.Outcomes() {
		outcomes = append(outcomes, o.CommandID+":"+o.Outcome)
	}
	// A reply redelivered after a bridge restart is acknowledged again,
	// not spoken again: the speaker's length below shows it was spoken once.
	if len(outcomes) == 0 {
		t.Errorf("the reply %s was never acknowledged", replies[0].ID)
	}
	for _, o := range outcomes {
		if o != replies[0].ID+":spoken" {
			t.Errorf("reply outcomes %v, want %s:spoken", outcomes, replies[0].ID)
		}
	}
	c.Agorad.Stop() // flushes the speaker
	played, err := c.Mic.Played()
	if err != nil {
		t.Fatal(err)
	}
	text := replies[0].Spoken
	if text == "" {
		text = replies[0].Text
	}
	ref, err := Synth(context.Background(), t.TempDir(), text, "-v", "en-us", "-s", "150")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Loud(played), Loud(ref); got < want*8/10 || got > want*12/10 {
		t.Errorf("the speaker played %v of loud audio, want about %v (the answer, once)", got, want)
	}
}

// TestSpokenConversationBrokerDown: the same round with mosquitto down from
// before the first note until the question has been heard: the batch and
// the question wait in the outbox, marked offline, go out in order when
// the broker is back, and are answered and spoken as before.
func TestSpokenConversationBrokerDown(t *testing.T) {
	if testing.Short() {
		t.Skip("the whole chain with real weights at real time: a few minutes")
	}
	c := startChain(t)
	ctx := t.Context()
	c.Broker.Stop()
	if _, err := c.Until(ctx, 30*time.Second, func(s Status) bool { return !s.Online }, nil); err != nil {
		t.Fatalf("agorad still online with the broker stopped: %v", err)
	}
	steps := sayRound(t, c, Inspection[:3])
	// The question, said while the broker is down; the broker comes back
	// once the device has queued the batch and the question.
	q := make(chan Step, 1)
	qErr := make(chan error, 1)
	go func() {
		st, err := c.SayLine(ctx, Inspection[3])
		q <- st
		qErr <- err
	}()
	queued, err := c.Until(ctx, HeardWithin+10*time.Second, func(s Status) bool { return s.Mode == "feedback" && s.Outbox >= 2 }, nil)
	if err != nil {
		t.Fatalf("the question was not queued while offline (outbox %d, mode %s): %v\n%s", queued.Outbox, queued.Mode, err, c.Logs())
	}
	if n := len(c.Bus.Sent()); n != 0 {
		t.Fatalf("%d messages reached the broker while it was down", n)
	}
	if err := c.Broker.Run(); err != nil {
		t.Fatal(err)
	}
	st, err := <-q, <-qErr
	if err != nil {
		t.Fatalf("%v\n%s", err, c.Logs())
	}
	steps = append(steps, st)
	steps = append(steps, sayRound(t, c, Inspection[4:])...)
	checkRound(t, c, steps, true)
}

// TestSpokenConversationBridgeKilled: the same round with agora-bridge
// killed (-9) while the graph runs the question (the graph takes 3 s per
// run here) and started again: the question is answered once and spoken
// once (the bridge's persistent session redelivers it, the graph answers
// the retry from its record of the first run).
func TestSpokenConversationBridgeKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("the whole chain with real weights at real time: a few minutes")
	}
	c := startChain(t, "REFGRAPH_DELAY_MS=3000")
	ctx := t.Context()
	steps := sayRound(t, c, Inspection[:3])
	q := make(chan Step, 1)
	qErr := make(chan error, 1)
	go func() {
		st, err := c.SayLine(ctx, Inspection[3])
		q <- st
		qErr <- err
	}()
	if !c.Bus.Wait(HeardWithin+10*time.Second, func(b *Bus) bool {
		s := b.Sent()
		return len(s) > 0 && s[len(s)-1].Kind == "utterance"
	}) {
		t.Fatalf("the question was not published\n%s", c.Logs())
	}
	// The bridge runs a device's messages one at a time: once it has
	// confirmed the batch, the graph is running the question.
	batchID := c.Bus.Sent()[0].ID
	if !c.Bus.Wait(30*time.Second, func(b *Bus) bool {
		for _, m := range b.Messages() {
			if m.Topic == "commands" && strings.Contains(string(m.Payload), `"ack"`) && strings.Contains(string(m.Payload), batchID) {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("the bridge never confirmed the batch\n%s", c.Logs())
	}
	time.Sleep(time.Second) // into the graph's 3 s run of the question
	if n := len(c.Bus.Replies()); n != 0 {
		t.Fatalf("%d replies before the bridge was killed: the kill would not land mid-run", n)
	}
	c.Bridge.Kill9()
	t.Log("agora-bridge killed (-9) while the graph runs the question")
	if err := c.Bridge.Start(); err != nil {
		t.Fatal(err)
	}
	st, err := <-q, <-qErr
	if err != nil {
		t.Fatalf("%v\n%s", err, c.Logs())
	}
	steps = append(steps, st)
	steps = append(steps, sayRound(t, c, Inspection[4:])...)
	checkRound(t, c, steps, false)
}
