package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
	"github.com/agora/agorad/transcribe"
)

// EnvBench enables the reply benchmark (bench/replybench.sh); it is slow
// (minutes of real-time speech) and timing-dependent, so never part of
// make test.
const EnvBench = "AGORAD_BENCH_REPLIES"

// firstAudioLog collects the daemon's "reply audio started" records.
type firstAudioLog struct {
	mu    sync.Mutex
	after map[string]time.Duration
}

func (l *firstAudioLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *firstAudioLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *firstAudioLog) WithGroup(string) slog.Handler            { return l }
func (l *firstAudioLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "reply audio started" {
		return nil
	}
	var id string
	var after time.Duration
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "id":
			id = a.Value.String()
		case "after":
			after = a.Value.Duration()
		}
		return true
	})
	l.mu.Lock()
	l.after[id] = after
	l.mu.Unlock()
	return nil
}

func (l *firstAudioLog) get(id string) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d, ok := l.after[id]
	return d, ok
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p*float64(len(s)) + 0.5)
	return s[max(0, min(len(s)-1, i-1))]
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

var benchSentences = []struct{ lang, text string }{
	{"en", "The crack in the beam is not structural."},
	{"nl", "Deze scheur is niet constructief."},
	{"en", "Check the anchor bolts on the north side."},
	{"nl", "Controleer de ankerbouten aan de noordkant."},
	{"en", "The moisture reading is within limits."},
	{"nl", "De vochtmeting valt binnen de norm."},
	{"en", "Take a photo of the corroded plate."},
	{"nl", "Maak een foto van de gecorrodeerde plaat."},
	{"en", "The fire door closes correctly."},
	{"nl", "De branddeur sluit goed."},
}

// TestReplyLatencyBench measures (1) a reply's arrival at the device to its
// first audio sample handed to PortAudio, against espeak-ng's own command
// line synthesizing the same sentence in the same run, and (2) end of
// speech to the utterance published, on the speech path (Silero VAD,
// whisper with the shared test model, store, mosquitto).
func TestReplyLatencyBench(t *testing.T) {
	if os.Getenv(EnvBench) == "" {
		t.Skip("benchmark: run bench/replybench.sh")
	}
	n := envInt("AGORAD_BENCH_N", 100)
	m := envInt("AGORAD_BENCH_UTTERANCES", 20)
	testaudio.NewVirtualMic(t, nil)
	broker := brokertest.Start(t)
	cfg := replyConfig(t, broker.URL())
	cfg.Input.Source = "default"
	// Real tiny.en weights when `make models` imported them (AGORAD_MODELS
	// may point elsewhere), else the shared weightless test model.
	cfg.Models.Whisper = filepath.Join(os.Getenv("AGORAD_MODELS"), "ggml-tiny.en.bin")
	if os.Getenv("AGORAD_MODELS") == "" {
		cfg.Models.Whisper = filepath.Join(testaudio.RepoRoot(), "models", "ggml-tiny.en.bin")
	}
	model := "real tiny.en"
	if _, err := os.Stat(cfg.Models.Whisper); err != nil {
		cfg.Models.Whisper, model = testaudio.Model(t, "for-tests-ggml-tiny.en.bin"), "weightless test tiny.en"
	}
	cfg.Transcribe.Language = "en"
	cfg.Transcribe.Threads = 2
	be := newBackend(t, broker, cfg.DeviceID)
	logs := &firstAudioLog{after: map[string]time.Duration{}}
	w, err := transcribe.New(transcribe.Options{ModelPath: cfg.Models.Whisper, Language: "en", Threads: 2,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	bt := &benchTranscriber{Transcriber: w}
	src := &pacedSource{speaking: func() bool { return false }}
	runDaemon(t, Options{Config: cfg, Logger: slog.New(logs), Transcriber: bt,
		OpenSource: func(context.Context) (audio.Source, error) { return src, nil }})

	// (1) replies, one at a time (each waits for the previous to be spoken).
	var daemon, cli []time.Duration
	for i := range n {
		s := benchSentences[i%len(benchSentences)]
		id := fmt.Sprintf("bench-%d", i)
		be.reply(protocol.ReplyCommand{ID: id, Text: s.text, Lang: s.lang})
		be.waitOutcome(id, protocol.OutcomeSpoken, 30*time.Second)
		after, ok := logs.get(id)
		if !ok {
			t.Fatalf("no first-audio record for %s", id)
		}
		daemon = append(daemon, after)
		// The engine's own CLI on the same sentence, voice and rate.
		voice := cfg.Replies.Voices.EN
		if s.lang == "nl" {
			voice = cfg.Replies.Voices.NL
		}
		out := filepath.Join(t.TempDir(), "cli.wav")
		start := time.Now()
		if b, err := exec.Command("espeak-ng", "-v", voice, "-s", strconv.Itoa(cfg.Replies.Rate), "-w", out, s.text).CombinedOutput(); err != nil {
			t.Fatalf("espeak-ng: %v: %s", err, b)
		}
		cli = append(cli, time.Since(start))
	}

	// (2) end of speech -> utterance published. The paced microphone says
	// each sentence; the clock starts when its last sample was captured.
	var eos, segDelay, whisperDur, afterWhisper []time.Duration
	for i := range m {
		s := benchSentences[(2*i)%len(benchSentences)] // English (tiny.en)
		speech := testaudio.SpeakArgs(t, s.text, "-v", "en-us")
		before := be.utterances.Count()
		src.say(testaudio.Concat(speech, testaudio.Silence(1500)))
		end := time.Now().Add(time.Duration(len(speech)) * time.Second / audio.SampleRate)
		if _, ok := be.utterances.WaitCount(before+1, 30*time.Second); !ok {
			t.Fatalf("utterance %d not published", i)
		}
		published := time.Now()
		eos = append(eos, published.Sub(end))
		bt.mu.Lock()
		if len(bt.calls) > 0 {
			c := bt.calls[len(bt.calls)-1]
			segDelay = append(segDelay, c[0].Sub(end))
			whisperDur = append(whisperDur, c[1].Sub(c[0]))
			afterWhisper = append(afterWhisper, published.Sub(c[1]))
		}
		bt.mu.Unlock()
		time.Sleep(1600 * time.Millisecond) // the trailing silence plays out
	}

	var b strings.Builder
	fmt.Fprintf(&b, "# replybench %s: %d one-sentence replies (nl/en, espeak-ng %s/%s at %d wpm), %d utterances (whisper: %s, %s); shared machine, wall clock\n",
		time.Now().UTC().Format(time.RFC3339), n, cfg.Replies.Voices.NL, cfg.Replies.Voices.EN, cfg.Replies.Rate, m, model, bt.texts())
	fmt.Fprintf(&b, "| measure | p50 | p95 | max |\n|---|---|---|---|\n")
	row := func(name string, ds []time.Duration) {
		fmt.Fprintf(&b, "| %s | %.1f ms | %.1f ms | %.1f ms |\n", name, ms(percentile(ds, .5)), ms(percentile(ds, .95)), ms(percentile(ds, 1)))
	}
	row("reply arrival -> first sample to PortAudio (agorad)", daemon)
	row("espeak-ng -w, whole sentence (CLI)", cli)
	row("end of speech -> utterance published", eos)
	if len(segDelay) > 0 {
		row("  of which: end of speech -> whisper call (VAD hangover, journal)", segDelay)
		row("  of which: whisper call ("+model+", 2 threads)", whisperDur)
		row("  of which: whisper done -> received by the backend (router, store, MQTT)", afterWhisper)
	}
	fmt.Fprintf(&b, "\nratio agorad first audio / CLI synthesis: p50 %.2f, p95 %.2f (target: agorad p95 < 150 ms: %v)\n",
		ms(percentile(daemon, .5))/ms(percentile(cli, .5)), ms(percentile(daemon, .95))/ms(percentile(cli, .95)), percentile(daemon, .95) < 150*time.Millisecond)
	fmt.Print(b.String())
	if out := os.Getenv("AGORAD_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// benchTranscriber is the real whisper. The shared test model has no real
// weights and transcribes nothing: an empty transcript is replaced by a
// fixed text after whisper ran, to carry the utterance through the rest of
// the path (router, store, MQTT), and counted.
type benchTranscriber struct {
	*transcribe.Transcriber
	mu          sync.Mutex
	calls       [][2]time.Time // start and end of each whisper call
	substituted int            // empty transcripts replaced
}

func (b *benchTranscriber) texts() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return fmt.Sprintf("%d of %d transcripts empty and substituted", b.substituted, len(b.calls))
}

func (b *benchTranscriber) Transcribe(ctx context.Context, s []float32) (transcribe.Result, error) {
	start := time.Now()
	res, err := b.Transcriber.Transcribe(ctx, s)
	b.mu.Lock()
	b.calls = append(b.calls, [2]time.Time{start, time.Now()})
	b.mu.Unlock()
	if err == nil && strings.TrimSpace(res.Text) == "" {
		res.Text, res.Rejected = "bench utterance", ""
		b.mu.Lock()
		b.substituted++
		b.mu.Unlock()
	}
	return res, err
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
