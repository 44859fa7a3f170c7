package replies

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/tts"
	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/bridge/fleetsim"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
	"github.com/agora/agorad/sync/uplink"
)

// drainSpeaker plays a stream at once (reads it to the end) and counts the
// samples: the real speaker paces at real time, hours for 200 KB of text.
type drainSpeaker struct {
	mu      sync.Mutex
	samples int
}

func (d *drainSpeaker) PlayStream(ctx context.Context, src audio.SampleReader, started func(time.Time)) (<-chan error, error) {
	done := make(chan error, 1)
	go func() {
		for first := true; ; first = false {
			x, err := src.Read()
			if first {
				started(time.Now())
			}
			d.mu.Lock()
			d.samples += len(x)
			d.mu.Unlock()
			if errors.Is(err, io.EOF) {
				done <- nil
				return
			}
			if err != nil {
				done <- err
				return
			}
			if ctx.Err() != nil {
				done <- ctx.Err()
				return
			}
		}
	}()
	return done, nil
}

// replyHandler hands the uplink's reply commands to the player, as the
// daemon does.
type replyHandler struct{ p *Player }

func (h replyHandler) HandleCommand(ctx context.Context, cmd protocol.Command) error {
	if cmd.Type == protocol.CmdReply {
		return h.p.Receive(ctx, *cmd.Reply)
	}
	return nil
}

func repoRoot(t *testing.T) string {
	wd, _ := os.Getwd()
	return filepath.Clean(filepath.Join(wd, "..", "..", "..", ".."))
}

// A graph answer of 200 KB is spoken whole (issue 27): the built
// agora-bridge sends it as numbered reply commands over mosquitto, the
// device's uplink and store take each, the player speaks each part to the
// end in order (in pieces of replies.max_chars), and every part's outcome
// reaches the backend as a spoken ack. The engine records what it is asked
// to say (espeak-ng itself is TestSynthesizePiecesEspeak's; 200 KB is
// hours of speech). AGORA_LONG_ANSWER_BYTES sets the size.
func TestEndToEndLongAnswerSpokenWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: mosquitto, agora-bridge, the reference graph (Python)")
	}
	root := repoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "refgraph")); err != nil {
		t.Skip("no refgraph/")
	}
	size := 200 << 10
	if v := os.Getenv("AGORA_LONG_ANSWER_BYTES"); v != "" {
		fmt.Sscan(v, &size)
	}
	bin := filepath.Join(t.TempDir(), "agora-bridge")
	if out, err := exec.Command("go", "build", "-o", bin, filepath.Join(root, "cmd", "agora-bridge")).CombinedOutput(); err != nil {
		t.Fatalf("build agora-bridge: %v\n%s", err, out)
	}
	g, err := fleetsim.StartRefGraph(t.Context(), root, "REFGRAPH_DB="+filepath.Join(t.TempDir(), "cp.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Stop()
	broker := brokertest.Start(t)
	acks := broker.Subscribe(t, "agora/v1/+/acks")
	br := fleetsim.NewProc("bridge", "", nil, bin, "run", "--broker", broker.URL(), "--agui-url", g.URL(),
		"--state-dir", t.TempDir(), "--log-level", "debug")
	if err := br.Start(); err != nil {
		t.Fatal(err)
	}
	defer br.Stop()
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(br.Log(), "agora-bridge running") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)

	const deviceID = "long-spoken-1"
	quiet := slog.New(slog.DiscardHandler)
	st, err := buffer.Open(t.TempDir(), buffer.Options{Sync: buffer.SyncNone, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	engine := &recEngine{lastWithEOF: true}
	spk := &drainSpeaker{}
	p, err := New(Options{Store: st, Engine: engine, Speaker: func() (Speaker, error) { return spk, nil },
		Mode: func() string { return "feedback" }, DefaultLang: "nl", MaxAge: 10 * time.Minute, MaxChars: 600,
		Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	q, err := st.EnqueueUtterance(buffer.Record{Text: fmt.Sprintf("Vertel alles [refgraph:long:%d]", size), Lang: "nl",
		StartedAt: time.Now(), Source: "typed"})
	if err != nil {
		t.Fatal(err)
	}
	up, err := uplink.New(uplink.Options{DeviceID: deviceID, BrokerURL: broker.URL(), BackoffMin: 20 * time.Millisecond,
		BackoffMax: 500 * time.Millisecond, KeepAlive: 5 * time.Second, Delivery: uplink.DeliveryBackend, AckTimeout: 30 * time.Second,
		Logger: quiet, Status: func() protocol.Status { return protocol.Status{Mode: "feedback", Version: "test"} }},
		st, replyHandler{p})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = up.Run(ctx) }()
	go func() { defer wg.Done(); _ = p.Run(ctx) }()
	defer func() { cancel(); wg.Wait() }()

	// Every part acked spoken, to the backend.
	type ack struct {
		CommandID string `json:"command_id"`
		Outcome   string `json:"outcome"`
	}
	var parts int
	var spoken []string
	msgs, ok := acks.WaitFor(180*time.Second, func(m []brokertest.Message) bool {
		spoken, parts = spoken[:0], 0
		for _, x := range m {
			var a ack
			json.Unmarshal(x.Payload, &a)
			if !strings.HasPrefix(a.CommandID, "reply-"+q.ID+".p") {
				continue
			}
			if parts == 0 {
				fmt.Sscanf(a.CommandID[strings.LastIndex(a.CommandID, "of")+2:], "%d", &parts)
			}
			if a.Outcome == protocol.OutcomeSpoken {
				spoken = append(spoken, a.CommandID)
			}
		}
		return parts > 0 && len(spoken) >= parts
	})
	if !ok {
		t.Fatalf("%d of %d parts acked spoken; acks %d\nbridge log:\n%s", len(spoken), parts, len(msgs), tailOf(br.Log(), 3000))
	}
	for i, id := range spoken {
		if want := fmt.Sprintf("reply-%s.p%dof%d", q.ID, i+1, parts); id != want {
			t.Fatalf("spoken ack %d is %s, want %s (in order, once)", i, id, want)
		}
	}
	th, err := g.Thread(deviceID)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := th["final_spoken"].(string)
	if len(answer) != size {
		t.Fatalf("the graph's spoken answer is %d bytes, want %d", len(answer), size)
	}
	said := strings.Join(engine.spoken(), " ")
	want, _ := tts.Prepare(answer, 0)
	if strings.Join(strings.Fields(said), " ") != strings.Join(strings.Fields(want), " ") {
		t.Fatalf("the engine was given %d bytes in %d pieces; the answer is %d bytes\nsaid: %.300q…\nwant: %.300q…",
			len(said), len(engine.spoken()), len(want), said, want)
	}
	for i, piece := range engine.spoken() {
		if n := len([]rune(piece)); n > 600 {
			t.Errorf("piece %d is %d characters, over max_chars", i, n)
		}
	}
	t.Logf("answer of %d bytes: %d reply parts, %d pieces synthesized, all spoken in order and acked", size, parts, len(engine.spoken()))
}

func tailOf(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
