// Command convbench times spoken conversation turns end to end (issue 22),
// every part real: the built agorad hearing a paced microphone (ALSA's file
// plugin reading a FIFO that ../shared/paced-mic.py feeds at real time),
// real whisper weights, mosquitto, the built agora-bridge and the reference
// graph (its echo answer, thinking 0 ms and 500 ms by REFGRAPH_DELAY_MS, or
// written like a language model's with -stream-tps). -complete-wait 0 gives
// every turn the hangover (the early end of a complete turn off).
//
// Each turn is one spoken question in feedback mode; the next is spoken once
// the answer was spoken. Every stage is timed from the wall-clock end of the
// question's audio in the feeder's log (the last sample of speech, not the
// daemon's own clock, which runs ahead when the FIFO backlog is read at
// once; espeak-ng's trailing silence is taken off) to the stage's time in agorad's debug line "turn stage"
// (cmd/agorad/internal/turns): turn_end, transcribed, published, reply,
// first_audio; then to the answer's last sample (last_audio: the device's
// "reply spoken" line of the answer's last part) and, between the parts of
// one answer, the gap from one part's end ("reply spoken") to the next
// part's first sample ("reply audio started"). -stream sets the bridge's
// agent.stream (written: the answer goes in sentence parts while the graph
// writes it; off: whole at the end, as before issue 47). It prints
// p50/p95/max per stage and the load average: the machine's other work
// shows in every number.
//
//	make build && go run ./bench/convbench -turns 50 -model models/ggml-tiny.en-q8_0.bin
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/sync/bridge/fleetsim"
	"github.com/agora/agorad/sync/brokertest"
)

// stageNames are agorad's turn stages (cmd/agorad/internal/stageNames),
// in order.
var stageNames = []string{"turn_end", "transcribed", "published", "reply", "first_audio"}

var questions = []string{
	"What should I write in the report about the crack in the beam?",
	"Is the rust on the north facade a structural problem?",
	"How wide may a crack in a concrete floor be?",
	"Which photos do I still need for the roof?",
	"Is this damp patch in the ceiling urgent?",
	"What is the next room on the inspection list?",
	"Does the railing on the stairs meet the rules?",
	"How do I record a missing fire door?",
	"Should the loose tiles in the bathroom be in the report?",
	"What did I note about the basement so far?",
}

func main() {
	n := flag.Int("turns", 50, "spoken turns per graph delay")
	model := flag.String("model", "models/ggml-tiny.en-q8_0.bin", "whisper model")
	lang := flag.String("language", "en", "transcribe.language")
	voice := flag.String("voice", "en-us", "espeak-ng voice of the questions")
	delays := flag.String("delays", "0ms,500ms", "the graph's thinking times")
	agorad := flag.String("agorad", "build/bin/agorad", "agorad binary (make build)")
	bridge := flag.String("bridge", "build/bin/agora-bridge", "agora-bridge binary (make build)")
	vadModel := flag.String("vad", "../shared/models/for-tests-silero-v6.2.0-ggml.bin", "Silero VAD model")
	feeder := flag.String("feeder", "../shared/paced-mic.py", "paced microphone feeder")
	speculate := flag.Duration("speculate-after", -1, "segment.speculate_after (-1: the default)")
	completeWait := flag.Duration("complete-wait", -1, "segment.complete_wait (-1: the default; 0: every turn waits the hangover)")
	streamTPS := flag.Float64("stream-tps", 0, "the graph writes its answer at this many words a second (REFGRAPH_STREAM_TPS; 0: at once)")
	firstToken := flag.Duration("first-token", 300*time.Millisecond, "with -stream-tps: the graph's first-word delay")
	answerWords := flag.String("answer-words", "40-80", "with -stream-tps: the answers' length in words, MIN-MAX")
	stream := flag.String("stream", "written", "the bridge's agent.stream: spoken, written or off")
	flag.Parse()
	var graphEnv []string
	if *streamTPS > 0 {
		graphEnv = []string{fmt.Sprintf("REFGRAPH_STREAM_TPS=%g", *streamTPS), fmt.Sprintf("REFGRAPH_FIRST_TOKEN_MS=%d", firstToken.Milliseconds()),
			"REFGRAPH_ANSWER_WORDS=" + *answerWords}
	}
	root, _ := os.Getwd()
	for _, f := range []*string{model, agorad, bridge, vadModel, feeder} {
		abs, err := filepath.Abs(*f)
		if err != nil {
			fail("%v", err)
		}
		*f = abs
	}
	load0 := loadavg()
	fmt.Printf("%d turns per delay, model %s (%s), complete_wait %v (-1: default), graph %v, bridge stream %s, load average at start %s\n",
		*n, filepath.Base(*model), *lang, *completeWait, graphEnv, *stream, load0)
	for _, ds := range strings.Split(*delays, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(ds))
		if err != nil {
			fail("-delays: %v", err)
		}
		res, err := round(root, d, *n, *model, *lang, *voice, *agorad, *bridge, *vadModel, *feeder, *speculate, *completeWait, graphEnv, *stream)
		if err != nil {
			fail("graph %v: %v", d, err)
		}
		fmt.Printf("\ngraph thinking %v: %d turns timed, load average now %s\n\n", d, len(res["first_audio"]), loadavg())
		fmt.Println("| from the end of speech to | p50 | p95 | max |")
		fmt.Println("|---|---|---|---|")
		for _, s := range append(stageNames, "last_audio", "gap between parts", publishedToAudio) {
			v := res[s]
			if len(v) == 0 {
				fmt.Printf("| %s | - | - | - |\n", s)
				continue
			}
			fmt.Printf("| %s | %s | %s | %s |\n", s, ms(fleetsim.Percentile(v, 50)), ms(fleetsim.Percentile(v, 95)), ms(fleetsim.Percentile(v, 100)))
		}
	}
}

// publishedToAudio is the row timing, per turn, the question's publish to
// the answer's first sample (bridge, graph, MQTT both ways, synthesis).
const publishedToAudio = "(per turn) published → first_audio"

func ms(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " ")
}

// round runs n turns against a graph thinking delay; it returns each stage's
// times from the end of speech.
func round(root string, delay time.Duration, n int, model, lang, voice, agoradBin, bridgeBin, vadModel, feederPy string, speculate, completeWait time.Duration, graphEnv []string, stream string) (map[string][]time.Duration, error) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "convbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := os.Mkdir(filepath.Join(dir, "broker"), 0o700); err != nil {
		return nil, err
	}
	broker, err := brokertest.New(filepath.Join(dir, "broker"))
	if err != nil {
		return nil, err
	}
	if err := broker.Run(); err != nil {
		return nil, err
	}
	defer broker.Stop()
	env := append([]string{"REFGRAPH_DB=" + filepath.Join(dir, "cp.sqlite"), fmt.Sprintf("REFGRAPH_DELAY_MS=%d", delay.Milliseconds())}, graphEnv...)
	g, err := fleetsim.StartRefGraph(ctx, root, env...)
	if err != nil {
		return nil, err
	}
	defer g.Stop()
	br := fleetsim.NewProc("bridge", "", nil, bridgeBin, "run", "--broker", broker.URL(), "--agui-url", g.URL(), "--state-dir", filepath.Join(dir, "bridge"),
		"--stream", stream)
	if err := br.Start(); err != nil {
		return nil, err
	}
	defer br.Stop()

	fifo, queue, feedLog := filepath.Join(dir, "mic.fifo"), filepath.Join(dir, "queue"), filepath.Join(dir, "feeder.log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		return nil, err
	}
	if err := os.Mkdir(queue, 0o700); err != nil {
		return nil, err
	}
	feed := fleetsim.NewProc("feeder", "", nil, "python3", feederPy, fifo, queue, feedLog, "7200")
	if err := feed.Start(); err != nil {
		return nil, err
	}
	defer feed.Stop()
	asoundrc := filepath.Join(dir, "asoundrc")
	if err := os.WriteFile(asoundrc, []byte(fmt.Sprintf(`pcm.filein {
  type file
  slave.pcm "null"
  file "/dev/null"
  infile "%s"
  format "raw"
}
pcm.mic {
  type plug
  slave { pcm "filein"; format S16_LE; rate 16000; channels 1 }
}
pcm.!default {
  type asym
  capture.pcm "mic"
  playback.pcm "mic"
}
`, fifo)), 0o600); err != nil {
		return nil, err
	}

	cfg := configs.Default()
	cfg.DeviceID = "bench-1"
	cfg.Mode = "feedback"
	cfg.StateDir = filepath.Join(dir, "state")
	cfg.Control.Socket = filepath.Join(dir, "agorad.sock")
	cfg.MQTT.Broker = broker.URL()
	cfg.Input.Source = "default"
	cfg.Input.HandsFree = true
	cfg.Models.Whisper, cfg.Models.VAD = model, vadModel
	cfg.Transcribe.Language = lang
	cfg.Log.Level, cfg.Log.Format = "debug", "json"
	cfg.Sounds.Device = "default"
	cfg.Metrics.Listen = ""
	if speculate >= 0 {
		cfg.Segment.SpeculateAfter = configs.Duration(speculate)
	}
	if completeWait >= 0 {
		cfg.Segment.CompleteWait = configs.Duration(completeWait)
	}
	yb, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "agorad.yaml")
	if err := os.WriteFile(cfgPath, yb, 0o600); err != nil {
		return nil, err
	}
	ag := fleetsim.NewProc("agorad", "", []string{"ALSA_CONFIG_PATH=/usr/share/alsa/alsa.conf:" + asoundrc}, agoradBin, "run", "-c", cfgPath)
	if err := ag.Start(); err != nil {
		return nil, err
	}
	defer ag.Stop()
	if !waitFor(2*time.Minute, func() bool { return strings.Contains(ag.Log(), "connected to MQTT broker") }) {
		return nil, fmt.Errorf("agorad never connected:\n%s", tail(ag.Log()))
	}
	time.Sleep(2 * time.Second) // the FIFO backlog read at start

	// One turn more than timed: the first warms whisper up.
	var names []string
	trail := map[string]time.Duration{}
	for i := 0; i <= n; i++ {
		name := fmt.Sprintf("%03d-q.raw", i)
		if trail[name], err = render(voice, questions[i%len(questions)], filepath.Join(dir, name)); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	for i, name := range names {
		if err := os.Rename(filepath.Join(dir, name), filepath.Join(queue, name)); err != nil {
			return nil, err
		}
		// An answer is over when its last part was spoken (a whole reply,
		// .p<n>of<n>, or a streamed .s<i>e).
		if !waitFor(90*time.Second, func() bool { return answersSpoken(ag.Log()) > i }) {
			fmt.Fprintf(os.Stderr, "turn %d: no reply spoken within 60 s; going on\n", i)
		}
		time.Sleep(time.Second) // the half-duplex tail
	}
	ends, err := feederEnds(feedLog)
	if err != nil {
		return nil, err
	}
	for name, t := range trail {
		if e, ok := ends[name]; ok {
			ends[name] = e.Add(-t) // the last sample of speech, not of the file
		}
	}
	log := ag.Log()
	// How many turns ended before the hangover (segment.complete_wait).
	fmt.Printf("turns ended early (complete_wait): %d\n", strings.Count(log, "turn ended early"))
	out, order, err := stages(log, names[1:], ends)
	if err != nil {
		return nil, err
	}
	answers := answerTimes(log)
	for k, id := range order {
		a, ok := answers[id]
		if end, found := ends[names[1:][k]]; ok && found && !a.last.IsZero() {
			out["last_audio"] = append(out["last_audio"], a.last.Sub(end))
		}
		out["gap between parts"] = append(out["gap between parts"], a.gaps...)
	}
	return out, nil
}

// render writes text spoken by espeak-ng as 16 kHz S16_LE mono raw and
// returns the silence after its last sample of speech (the last 10 ms
// louder than -45 dBFS).
func render(voice, text, out string) (time.Duration, error) {
	wav := out + ".wav"
	if b, err := exec.Command("espeak-ng", "-v", voice, "-s", "150", "-w", wav, text).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("espeak-ng: %v: %s", err, b)
	}
	defer os.Remove(wav)
	if b, err := exec.Command("sox", wav, "-r", "16000", "-c", "1", "-b", "16", "-e", "signed-integer", "-t", "raw", out).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("sox: %v: %s", err, b)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		return 0, err
	}
	const win = 160 // 10 ms
	n := len(raw) / 2
	last := 0
	for at := 0; at+win <= n; at += win {
		var e float64
		for i := at; i < at+win; i++ {
			v := float64(int16(binary.LittleEndian.Uint16(raw[2*i:]))) / 32768
			e += v * v
		}
		if e/win > 3.2e-5 { // -45 dBFS
			last = at + win
		}
	}
	return time.Duration(n-last) * time.Second / 16000, nil
}

// feederEnds reads "<unix time> end NAME" lines.
func feederEnds(path string) (map[string]time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]time.Time{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ts float64
		var what, name string
		if _, err := fmt.Sscanf(sc.Text(), "%f %s %s", &ts, &what, &name); err == nil && what == "end" {
			out[name] = time.Unix(0, int64(ts*1e9))
		}
	}
	return out, sc.Err()
}

// stages matches the k-th question turn in agorad's log (by its turn_end)
// to the k-th timed question and times each stage from its end.
func stages(log string, names []string, ends map[string]time.Time) (map[string][]time.Duration, []string, error) {
	type line struct {
		Msg   string `json:"msg"`
		Stage string `json:"stage"`
		ID    string `json:"id"`
		At    string `json:"at"`
	}
	byID := map[string]map[string]time.Time{}
	var order []string
	for _, l := range strings.Split(log, "\n") {
		var x line
		if json.Unmarshal([]byte(l), &x) != nil || x.Msg != "turn stage" || x.ID == "" {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, x.At)
		if err != nil {
			continue
		}
		if byID[x.ID] == nil {
			byID[x.ID] = map[string]time.Time{}
			order = append(order, x.ID)
		}
		byID[x.ID][x.Stage] = at
	}
	sort.SliceStable(order, func(i, j int) bool { return byID[order[i]]["turn_end"].Before(byID[order[j]]["turn_end"]) })
	if len(order) > 0 {
		order = order[1:] // the warm-up turn
	}
	if len(order) != len(names) {
		fmt.Fprintf(os.Stderr, "%d question turns heard for %d spoken (a question cut in two or lost): timing the first %d\n", len(order), len(names), min(len(order), len(names)))
	}
	out := map[string][]time.Duration{}
	order = order[:min(len(order), len(names))]
	for k := range order {
		end, ok := ends[names[k]]
		if !ok {
			continue
		}
		for s, at := range byID[order[k]] {
			out[s] = append(out[s], at.Sub(end))
		}
		// The answer's own share, per turn, apart from whisper (whose time
		// a loaded machine stretches most).
		if p, a := byID[order[k]]["published"], byID[order[k]]["first_audio"]; !p.IsZero() && !a.IsZero() {
			out[publishedToAudio] = append(out[publishedToAudio], a.Sub(p))
		}
	}
	return out, order, nil
}

func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

func tail(s string) string {
	if len(s) > 3000 {
		return s[len(s)-3000:]
	}
	return s
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "convbench: "+format+"\n", a...)
	os.Exit(1)
}
