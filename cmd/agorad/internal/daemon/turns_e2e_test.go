package daemon

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/cmd/agorad/internal/turns"
	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/sync/bridge/fleetsim"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
)

// stageSeconds reads agorad_turn_stage_seconds: per stage, the samples
// observed and their sum.
func stageSeconds(t *testing.T, d *Daemon) map[string]*dto.Histogram {
	t.Helper()
	mfs, err := d.met.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.Histogram{}
	for _, mf := range mfs {
		if mf.GetName() != "agorad_turn_stage_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "stage" {
					out[l.GetValue()] = m.GetHistogram()
				}
			}
		}
	}
	return out
}

// A spoken question, every part real but the microphone (a source paced at
// real time whose chunks carry the wall clock): tiny.en, mosquitto, the
// built agora-bridge and the reference graph thinking 0 ms or 2.5 s. Each
// stage of the turn is observed once, in order, turn_end one hangover
// after the end of speech; the reply is spoken through the ALSA file
// speaker, and the "thinking" earcon is heard before it only when the graph
// took longer than replies.thinking_after.
func TestTurnTimeline(t *testing.T) {
	if testing.Short() {
		t.Skip("real tiny.en, mosquitto, agora-bridge, the reference graph, espeak-ng and PortAudio")
	}
	model := testaudio.RealModel(t, "tiny.en")
	root := testaudio.RepoRoot()
	bridgeBin := filepath.Join(t.TempDir(), "agora-bridge")
	if b, err := exec.Command("go", "build", "-o", bridgeBin, "github.com/agora/agorad/cmd/agora-bridge").CombinedOutput(); err != nil {
		t.Fatalf("build agora-bridge: %v\n%s", err, b)
	}
	question := testaudio.Speak(t, "en-us", "What should I write in the report about the crack in the beam?")
	cue, err := audio.Earcon("thinking")
	if err != nil {
		t.Fatal(err)
	}
	const thinkingAfter = 1500 * time.Millisecond
	tests := []struct {
		name    string
		delay   time.Duration // the graph's thinking
		wantCue bool
	}{
		{"quick graph", 0, false},
		{"slow graph", 2500 * time.Millisecond, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mic := testaudio.NewVirtualMic(t, nil) // the speaker; the microphone is src
			g, err := fleetsim.StartRefGraph(t.Context(), root, "REFGRAPH_DB="+filepath.Join(t.TempDir(), "cp.sqlite"),
				fmt.Sprintf("REFGRAPH_DELAY_MS=%d", tc.delay.Milliseconds()))
			if err != nil {
				t.Fatal(err)
			}
			defer g.Stop()
			broker := brokertest.Start(t)
			br := fleetsim.NewProc("bridge", "", nil, bridgeBin, "run", "--broker", broker.URL(), "--agui-url", g.URL(),
				"--state-dir", t.TempDir())
			if err := br.Start(); err != nil {
				t.Fatal(err)
			}
			defer br.Stop()
			cfg := replyConfig(t, broker.URL())
			cfg.Input.Source = "default" // replaced by src
			cfg.Input.HandsFree = true
			cfg.Models.Whisper = model
			cfg.Sounds.Enabled, cfg.Sounds.Device = true, "default"
			cfg.Replies.ThinkingAfter = configs.Duration(thinkingAfter)
			cfg.Segment.CompleteWait = 0 // the stages after the hangover; the early end: TestTurnEndsWhenTheSentenceEnds
			be := newBackend(t, broker, cfg.DeviceID)
			src := &pacedSource{speaking: func() bool { return false }}
			d, stop := runDaemon(t, Options{Config: cfg,
				OpenSource: func(context.Context) (audio.Source, error) { return src, nil }})
			time.Sleep(500 * time.Millisecond)
			src.say(question)
			if _, ok := be.utterances.WaitCount(1, 60*time.Second); !ok {
				t.Fatal("the question was never published")
			}
			deadline := time.Now().Add(60 * time.Second)
			var outs []replyAck
			for len(outs) == 0 && time.Now().Before(deadline) {
				for _, a := range be.outcomes() {
					if a.Outcome == protocol.OutcomeSpoken {
						outs = append(outs, a)
					}
				}
				time.Sleep(50 * time.Millisecond)
			}
			if len(outs) != 1 {
				t.Fatalf("reply acks %+v, want one spoken\nbridge log:\n%s", be.outcomes(), br.Log())
			}
			hs := stageSeconds(t, d)
			var prev float64
			for _, s := range turns.Stages {
				h := hs[s]
				if h == nil || h.GetSampleCount() != 1 {
					t.Fatalf("stage %s: %v, want one sample (all: %v)", s, h, hs)
				}
				v := h.GetSampleSum()
				t.Logf("end of speech → %-11s %6.3f s", s, v)
				if v < prev {
					t.Errorf("stage %s at %.3f s, before the previous stage (%.3f s)", s, v, prev)
				}
				prev = v
			}
			hang := cfg.Segment.Hangover.D().Seconds()
			if te := hs[turns.TurnEnd].GetSampleSum(); te < hang-0.1 || te > hang+0.7 {
				t.Errorf("turn_end %.3f s after the end of speech, want about the hangover (%.1f s)", te, hang)
			}
			if wait := hs[turns.Reply].GetSampleSum() - hs[turns.Published].GetSampleSum(); wait < tc.delay.Seconds() {
				t.Errorf("published → reply %.3f s, below the graph's own %v", wait, tc.delay)
			}
			stop()
			played := mic.Played(t)
			lag, corr := testaudio.Find(cue, played)
			heard := corr > 0.9
			t.Logf("thinking earcon: correlation %.3f at %.2f s of %.2f s played", corr, float64(lag)/audio.SampleRate, float64(len(played))/audio.SampleRate)
			if heard != tc.wantCue {
				t.Errorf("thinking earcon heard %v (correlation %.3f), want %v", heard, corr, tc.wantCue)
			}
		})
	}
}
