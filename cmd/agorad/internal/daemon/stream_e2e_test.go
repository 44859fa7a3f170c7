package daemon

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/sync/bridge/fleetsim"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
)

// A spoken question through the paced microphone, tiny.en, mosquitto, the
// built agora-bridge (agent.stream written) and the reference graph
// writing like a language model (first word after 300 ms, 30 words a
// second, 40-80 words): the answer comes in streamed parts
// (<reply>.s<i>, the last .s<i>e), each acked spoken in order, and the
// device is already speaking the first part before the bridge has the
// graph's last word (the last part is sent only after RUN_FINISHED).
func TestStreamedAnswerSpokenWhileWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("real tiny.en, mosquitto, agora-bridge, the reference graph, espeak-ng and PortAudio")
	}
	model := testaudio.RealModel(t, "tiny.en")
	root := testaudio.RepoRoot()
	bridgeBin := filepath.Join(t.TempDir(), "agora-bridge")
	if b, err := exec.Command("go", "build", "-o", bridgeBin, "github.com/agora/agorad/cmd/agora-bridge").CombinedOutput(); err != nil {
		t.Fatalf("build agora-bridge: %v\n%s", err, b)
	}
	question := testaudio.Speak(t, "en-us", "Is this railing high enough?")
	testaudio.NewVirtualMic(t, nil) // the speaker; the microphone is src
	g, err := fleetsim.StartRefGraph(t.Context(), root, "REFGRAPH_DB="+filepath.Join(t.TempDir(), "cp.sqlite"),
		"REFGRAPH_STREAM_TPS=30", "REFGRAPH_FIRST_TOKEN_MS=300", "REFGRAPH_ANSWER_WORDS=40-80")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Stop()
	broker := brokertest.Start(t)
	br := fleetsim.NewProc("bridge", "", nil, bridgeBin, "run", "--broker", broker.URL(), "--agui-url", g.URL(),
		"--state-dir", t.TempDir(), "--stream", "written")
	if err := br.Start(); err != nil {
		t.Fatal(err)
	}
	defer br.Stop()
	cfg := replyConfig(t, broker.URL())
	cfg.Input.Source = "default" // replaced by src
	cfg.Input.HandsFree = true
	cfg.Models.Whisper = model
	be := newBackend(t, broker, cfg.DeviceID)

	// When each command reached the broker's subscribers (the device's
	// arrival, within a millisecond on loopback).
	var mu sync.Mutex
	arrived := map[string]time.Time{}
	var order []string
	tok := be.cli.Subscribe(protocol.Topic(cfg.DeviceID, protocol.TopicCommands), 1, func(_ paho.Client, m paho.Message) {
		var c struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		}
		if json.Unmarshal(m.Payload(), &c) == nil && c.Type == protocol.CmdReply {
			mu.Lock()
			if _, ok := arrived[c.ID]; !ok {
				arrived[c.ID] = time.Now()
				order = append(order, c.ID)
			}
			mu.Unlock()
		}
	})
	if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("subscribe to commands: %v", tok.Error())
	}

	src := &pacedSource{speaking: func() bool { return false }}
	d, _ := runDaemon(t, Options{Config: cfg, OpenSource: func(context.Context) (audio.Source, error) { return src, nil }})
	time.Sleep(500 * time.Millisecond)
	src.say(question)
	if _, ok := be.utterances.WaitCount(1, 60*time.Second); !ok {
		t.Fatal("the question was never published")
	}
	// When the device began speaking each part (the player's own state).
	speaking := map[string]time.Time{}
	deadline := time.Now().Add(90 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		if id := d.replies.Status().Speaking; id != "" {
			if _, ok := speaking[id]; !ok {
				speaking[id] = time.Now()
			}
		}
		mu.Lock()
		for _, id := range order {
			if p, ok := protocol.ParseReplyPart(id); ok && p.Last {
				last = id
			}
		}
		mu.Unlock()
		if last != "" && spokenAck(be, last) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if last == "" {
		t.Fatalf("no last streamed part arrived; reply commands %v\nbridge log:\n%s", order, br.Log())
	}
	lp, _ := protocol.ParseReplyPart(last)
	if lp.Index < 2 {
		t.Fatalf("the answer came in %d part(s) (%v), want several", lp.Index, order)
	}
	// Every part, in order, acked spoken.
	var acked []string
	for _, a := range be.outcomes() {
		if a.Outcome != protocol.OutcomeSpoken {
			t.Errorf("reply %s acked %s (%s)", a.CommandID, a.Outcome, a.Error)
		}
		acked = append(acked, a.CommandID)
	}
	var want []string
	for i := 1; i <= lp.Index; i++ {
		want = append(want, protocol.StreamPartID(lp.Reply, i, i == lp.Index))
	}
	if strings.Join(acked, " ") != strings.Join(want, " ") {
		t.Fatalf("acks %v, want %v spoken in order", acked, want)
	}
	first := want[0]
	t.Logf("%d parts; first part arrived %v and was spoken from %v before the last part arrived",
		lp.Index, arrived[last].Sub(arrived[first]).Round(time.Millisecond), arrived[last].Sub(speaking[first]).Round(time.Millisecond))
	if speaking[first].IsZero() || !speaking[first].Before(arrived[last]) {
		t.Errorf("the first part was spoken from %v, not before the graph's last word (the last part arrived %v)",
			speaking[first].Format(time.StampMilli), arrived[last].Format(time.StampMilli))
	}
}

func spokenAck(be *backend, id string) bool {
	for _, a := range be.outcomes() {
		if a.CommandID == id && a.Outcome == protocol.OutcomeSpoken {
			return true
		}
	}
	return false
}
