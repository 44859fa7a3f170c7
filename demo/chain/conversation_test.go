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
	root, err := filepath.Abs("../..")
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
func startChain(t *testing.T) *Chain {
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
		Progress: t.Logf})
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
	ctx := t.Context()
	var steps []Step
	for _, l := range Inspection {
		st, err := c.SayLine(ctx, l)
		if err != nil {
			t.Fatalf("%v\n%s", err, c.Logs())
		}
		t.Logf("%q heard as %q; effect %.1f s after the end of speech", l.Text, st.Heard, st.Done.Sub(st.End).Seconds())
		steps = append(steps, st)
	}
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
		order = append(order, m["kind"].(string)+":"+m["message_id"].(string))
	}
	if want := []string{"batch:" + batch.ID, "utterance:" + question.ID}; strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("graph runs %v, want %v", order, want)
	}
	for id, n := range th["attempts_by_message"].(map[string]any) {
		if n.(float64) != 1 {
			t.Errorf("message %s reached the graph %v times", id, n)
		}
	}
	rn, _ := json.Marshal(th["report_notes"])
	replies := c.Bus.Replies()
	if len(replies) != 1 || replies[0].InReplyTo != question.ID {
		t.Fatalf("replies %+v, want one, to the question %s", replies, question.ID)
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
	if want := replies[0].ID + ":spoken"; strings.Join(outcomes, " ") != want {
		t.Errorf("reply outcomes %v, want %s once", outcomes, want)
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
