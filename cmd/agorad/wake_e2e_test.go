package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/cmd/internal/control"
	"github.com/agora/agorad/sync/brokertest"
)

// wakeRound is what TestRunWakePhraseRealWhisper says into the microphone,
// in TestRealWakePhrases' English voice (en-us, 140 words a minute): a
// note, a wake sentence with a question, a sentence ending in the switch
// back, a near-miss. With the frame-aligned gaps below, the real tiny.en
// writes "..., agora, log it as serious." and "..., aghora, listen." for
// the two wake sentences (measured; a bare "Agora" at the start of an
// utterance it mostly mishears, see issue 15's note).
var wakeRound = []string{
	"The beam at grid C is deflected.",
	"The crack in the north wall is ten millimetres wide, Agora, log it as serious.",
	"Please record the moisture reading in the basement, Agora, listen.",
	"The insulation is made of angora wool.",
}

// TestRunWakePhraseRealWhisper: the wake phrase through the whole daemon
// with real recognition. espeak-ng sentences go through the ALSA file
// microphone, PortAudio, Silero, the real tiny.en, the wake rules and the
// router to a real mosquitto: the note is buffered; the wake sentence
// hands the buffer over as one batch, with the words before the wake word
// last in it, and sends the rest as the question; in feedback mode the
// words before "Agora, listen" are sent, then the device listens again;
// the near-miss "angora" is buffered, not sent.
func TestRunWakePhraseRealWhisper(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end with real Whisper weights: slow")
	}
	model := testaudio.RealModel(t, "tiny.en")
	testaudio.NewVirtualMic(t, spokenRound(t, wakeRound), testaudio.DiscardPlayback())
	broker := brokertest.Start(t)
	sub := broker.Subscribe(t, "agora/v1/inspector-7/#")
	cfg := baseConfig(t, broker.URL())
	cfg.Input.Source = "default"
	cfg.Input.HandsFree = true
	cfg.Models.Whisper = model
	cfg.Transcribe.Language = "en"
	cfg.Transcribe.Threads = 2
	// At real time, as a person speaks: an unpaced file microphone delivers
	// all four sentences at once, whisper then packs the backlog into one
	// window and the text changes with how the jobs happened to queue
	// ("log it as serious" became "laga desirias" in one run).
	d := startPacedDaemon(t, cfg)
	st, got, desc, export := heardRound(t, d, sub, len(wakeRound), 3)

	// The batch, the question, the words before the switch back; nothing
	// else: the near-miss stays on the device.
	if len(got) != 3 || got[0]["type"] != "batch" {
		t.Fatalf("backend received %d messages %q, want the listen buffer as one batch, the question and the words before the switch back\n%s", len(got), desc, d.log.String())
	}
	if b := strings.ToLower(desc[0]); !strings.Contains(b, "deflected") || !strings.Contains(b, "north wall") || strings.Contains(b, "agora") {
		t.Errorf("batch %s: want the note and the words before the wake word", desc[0])
	}
	if q := strings.ToLower(desc[1]); !strings.Contains(q, "serious") || strings.Contains(q, "agora") || strings.Contains(q, "north wall") {
		t.Errorf("question %q: want the words after the wake word only", desc[1])
	}
	if m := strings.ToLower(desc[2]); !strings.Contains(m, "moisture") || strings.Contains(m, "listen") {
		t.Errorf("third message %q: want the words before \"Agora, listen\" only", desc[2])
	}
	if st.Mode != "listen" || st.Buffered != 1 {
		t.Errorf("at the end: mode %s with %d notes buffered, want listen with 1 (\"Agora, listen\" switches back, \"angora\" does not wake)", st.Mode, st.Buffered)
	}
	if strings.Contains(strings.ToLower(export), "deflected") {
		t.Errorf("listen buffer still holds the note handed over in the batch:\n%s", export)
	}
}

// spottedRound: sentences whose name tiny.en does not write (measured:
// "I've got a 'what is the maximum span ...'", "I don't know what it is
// then."), so only the keyword spotter can hear it; a note before, a
// near-miss after.
var spottedRound = []string{
	"The gutter on the east side is blocked.",
	"Agora, what is the maximum span for this beam?",
	"Agora, listen.",
	"The insulation is made of angora wool.",
}

// TestRunSpottedNameRealWhisper: the name whisper mishears, heard by the
// keyword spotter, through the whole daemon: the paced ALSA microphone,
// Silero, the real tiny.en and spotter, the router, a real mosquitto. The
// note goes over as the batch, the question is the words after the name,
// "Agora, listen" switches back, the near-miss stays a note.
func TestRunSpottedNameRealWhisper(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end with real Whisper weights: slow")
	}
	model := testaudio.RealModel(t, "tiny.en")
	kwsDir := testaudio.SpotterDir(t)
	testaudio.NewVirtualMic(t, spokenRound(t, spottedRound), testaudio.DiscardPlayback())
	broker := brokertest.Start(t)
	sub := broker.Subscribe(t, "agora/v1/inspector-7/#")
	cfg := baseConfig(t, broker.URL())
	cfg.Input.Source = "default"
	cfg.Input.HandsFree = true
	cfg.Models.Whisper = model
	cfg.Models.Dir = filepath.Dir(kwsDir) // the spotter's front end: models/kws
	cfg.Wake.Spotter = "on"
	cfg.Transcribe.Language = "en"
	cfg.Transcribe.Threads = 2
	d := startPacedDaemon(t, cfg)
	st, got, desc, export := heardRound(t, d, sub, len(spottedRound), 2)
	if !strings.Contains(d.log.String(), "keyword spotter ready") {
		t.Fatalf("the daemon did not start its keyword spotter\n%s", d.log.String())
	}
	if !strings.Contains(d.log.String(), "kernels=XNNPACK") {
		t.Errorf("the spotter does not run on XNNPACK (its log: the kernels it runs on)\n%s", d.log.String())
	}
	if len(got) != 2 || got[0]["type"] != "batch" {
		t.Fatalf("backend received %d messages %q, want the listen buffer as one batch and the question\n%s", len(got), desc, d.log.String())
	}
	// tiny.en's words for the rest (measured): "The Gugger on the east side
	// is blocked.", "what is the maximum pan for this meme?", "The
	// installation is made of anger at world." or "... made on man's orbit
	// world." (whisper's words vary from run to run).
	if b := strings.ToLower(desc[0]); !strings.Contains(b, "east side") {
		t.Errorf("batch %s: want the note", desc[0])
	}
	if q := strings.ToLower(desc[1]); !strings.HasPrefix(q, "what is the maximum") {
		t.Errorf("question %q: want the words after the name, and only those", desc[1])
	}
	if st.Mode != "listen" || st.Buffered != 1 || !strings.Contains(strings.ToLower(export), "is made") {
		t.Errorf("at the end: mode %s with %d notes buffered (%s), want listen with the near-miss only", st.Mode, st.Buffered, export)
	}
}

// spokenRound is sentences in TestRealWakePhrases' English voice, 2.5 s
// apart, each starting on a multiple of the VAD's 512-sample frame (so what
// whisper gets of one does not depend on the length of the ones before
// it), checked to make one utterance each for the daemon's segmenter, or
// the test's premise is wrong.
func spokenRound(t *testing.T, sentences []string) []float32 {
	t.Helper()
	parts := [][]float32{make([]float32, 32*512)}
	for _, s := range sentences {
		sp := testaudio.SpeakArgs(t, s, wakeVoices["en"]...)
		gap := 2500*audio.SampleRate/1000 + (512-(len(sp)+2500*audio.SampleRate/1000)%512)%512
		parts = append(parts, sp, make([]float32, gap))
	}
	speech := testaudio.Concat(parts...)
	if us := segmentTruth(t, speech); len(us) != len(sentences) {
		t.Fatalf("segmenter found %d utterances in %d sentences", len(us), len(sentences))
	}
	return speech
}

// heardRound waits until whisper has heard all n utterances and the backend
// has at least sent messages (everything sent in feedback mode is on the
// broker within seconds), and returns the daemon's status, the data
// messages with their descriptions, and the listen buffer's export.
func heardRound(t *testing.T, d *running, sub *brokertest.Subscriber, n, sent int) (st control.Status, got []map[string]any, desc []string, export string) {
	t.Helper()
	deadline := time.Now().Add(4 * time.Minute)
	for status(t, d.socket).Transcriptions < uint64(n) && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if st := status(t, d.socket); st.Transcriptions < uint64(n) {
		t.Fatalf("whisper ran %d times in 4 min, want %d\n%s", st.Transcriptions, n, d.log.String())
	}
	time.Sleep(time.Second) // the last text is routed after its whisper call returns
	st = status(t, d.socket)
	sub.WaitFor(20*time.Second, func(m []brokertest.Message) bool { return len(dataMessages(m)) >= sent })
	time.Sleep(time.Second)
	got = dataMessages(sub.Messages())
	for _, m := range got {
		desc = append(desc, describe(m))
	}
	export, _ = agoractl(t, d.socket, "buffer", "export")
	t.Logf("backend received:\n%s\nlisten buffer:\n%s", strings.Join(desc, "\n"), export)
	return st, got, desc, export
}
