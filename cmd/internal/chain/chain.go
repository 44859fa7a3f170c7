package chain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/sync/bridge/fleetsim"
	"github.com/agora/agorad/sync/brokertest"
)

// Options chooses what the chain runs.
type Options struct {
	// Root is the repository: refgraph/ is served from it.
	Root string
	// BinDir holds the built agorad and agora-bridge.
	BinDir string
	// Dir is the chain's scratch directory: broker, graph database,
	// bridge and device state, the microphone, the logs.
	Dir string
	// Whisper and VAD are model paths.
	Whisper, VAD string
	// ModelsDir holds the keyword spotter's front end (kws/); empty: the
	// spotter is off and whisper's text alone hears the name.
	ModelsDir string
	// Language is transcribe.language (en, nl, auto).
	Language string
	// Voice is espeak-ng's options for the lines Say speaks; default
	// Voice (en-us, 140 words a minute).
	Voice []string
	// DeviceID names the device; default inspector-7.
	DeviceID string
	// Earcons plays the earcons (the speaker gets them with the replies).
	Earcons bool
	// GraphEnv is more environment for the reference graph
	// (REFGRAPH_DELAY_MS=...).
	GraphEnv []string
	// Progress, when set, gets a line per component started.
	Progress func(format string, args ...any)
}

// Chain is the running chain. Stop ends everything it started.
type Chain struct {
	Opts   Options
	Broker *brokertest.Broker
	Graph  *fleetsim.RefGraph
	Bridge *fleetsim.Proc
	Agorad *fleetsim.Proc
	Mic    *Mic
	Bus    *Bus
	// Socket is agorad's control socket, Config its configuration file.
	Socket, Config string
	// OnSpoken, when set, is called as each clip Play puts into the
	// microphone has been spoken.
	OnSpoken func(Spoken)

	stopMic context.CancelFunc
	micErr  chan error
}

// Start brings up mosquitto, the reference graph, agora-bridge, the
// microphone and agorad, in that order, and waits until agorad answers on
// its control socket and is online. On failure what was started is stopped.
func Start(ctx context.Context, o Options) (c *Chain, err error) {
	if o.DeviceID == "" {
		o.DeviceID = "inspector-7"
	}
	if o.Language == "" {
		o.Language = "en"
	}
	if o.Voice == nil {
		o.Voice = Voice
	}
	say := func(format string, args ...any) {
		if o.Progress != nil {
			o.Progress(format, args...)
		}
	}
	c = &Chain{Opts: o, micErr: make(chan error, 1)}
	defer func() {
		if err != nil {
			c.Stop()
			c = nil
		}
	}()
	for _, b := range []string{"agorad", "agora-bridge", "agoractl"} {
		if _, err := os.Stat(filepath.Join(o.BinDir, b)); err != nil {
			return c, fmt.Errorf("the chain needs the built %s (make build): %w", b, err)
		}
	}
	t0 := time.Now()
	bdir := filepath.Join(o.Dir, "broker")
	if err := os.MkdirAll(bdir, 0o700); err != nil {
		return c, fmt.Errorf("make the broker's directory: %w", err)
	}
	c.Broker, err = brokertest.New(bdir)
	if err != nil {
		return c, fmt.Errorf("prepare mosquitto: %w", err)
	}
	if err := c.Broker.Run(); err != nil {
		c.Broker = nil
		return c, err
	}
	say("mosquitto        %s (%v)", c.Broker.URL(), since(t0))

	t0 = time.Now()
	c.Graph, err = fleetsim.StartRefGraph(ctx, o.Root, append([]string{"REFGRAPH_DB=" + filepath.Join(o.Dir, "refgraph.sqlite"), "REFGRAPH_LOG_LEVEL=info"}, o.GraphEnv...)...)
	if err != nil {
		return c, fmt.Errorf("start the reference graph: %w", err)
	}
	say("reference graph  %s (uvicorn, %v)", c.Graph.URL(), since(t0))

	t0 = time.Now()
	c.Bridge = fleetsim.NewProc("agora-bridge", "", nil, filepath.Join(o.BinDir, "agora-bridge"), "run",
		"--broker", c.Broker.URL(), "--agui-url", c.Graph.URL(), "--state-dir", filepath.Join(o.Dir, "bridge"), "--log-level", "debug")
	if err := c.Bridge.Start(); err != nil {
		return c, err
	}
	say("agora-bridge     %s (%v)", "started", since(t0))

	if c.Bus, err = Record(c.Broker.URL(), o.DeviceID); err != nil {
		return c, err
	}
	if c.Mic, err = NewMic(o.Dir); err != nil {
		return c, err
	}
	mctx, cancel := context.WithCancel(context.Background())
	c.stopMic = cancel
	go func() { c.micErr <- c.Mic.Run(mctx) }()

	t0 = time.Now()
	c.Socket = filepath.Join(o.Dir, "agorad.sock")
	if c.Config, err = c.writeConfig(); err != nil {
		return c, err
	}
	c.Agorad = fleetsim.NewProc("agorad", "", c.Mic.Env(), filepath.Join(o.BinDir, "agorad"), "run", "-c", c.Config)
	if err := c.Agorad.Start(); err != nil {
		return c, err
	}
	if err := c.WaitOnline(ctx, 3*time.Minute); err != nil {
		return c, err
	}
	say("agorad           %s, online, mode listen (%v)", filepath.Base(o.Whisper), since(t0))
	return c, nil
}

func (c *Chain) writeConfig() (string, error) {
	o := c.Opts
	cfg := configs.Default()
	cfg.DeviceID = o.DeviceID
	cfg.Mode = "listen"
	cfg.StateDir = filepath.Join(o.Dir, "agorad")
	cfg.Control.Socket = c.Socket
	cfg.MQTT.Broker = c.Broker.URL()
	// The bridge confirms each entry: the device's unconfirmed count is
	// the proof that nothing was lost on the way.
	cfg.MQTT.Delivery = "backend"
	cfg.MQTT.ReconnectMin = configs.Duration(100 * time.Millisecond)
	cfg.MQTT.ReconnectMax = configs.Duration(time.Second)
	cfg.Input.Source = "default"
	cfg.Input.HandsFree = true
	cfg.Models.Whisper = o.Whisper
	cfg.Models.VAD = o.VAD
	cfg.Wake.Spotter = "off"
	if o.ModelsDir != "" {
		cfg.Models.Dir = o.ModelsDir
		cfg.Wake.Spotter = "on"
	}
	cfg.Transcribe.Language = o.Language
	cfg.Transcribe.Threads = 2
	cfg.Sounds = configs.Sounds{Enabled: o.Earcons, Volume: 1, Device: Speaker}
	cfg.Metrics.Listen = ""
	cfg.Log.Level = "debug"
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("encode agorad's configuration: %w", err)
	}
	p := filepath.Join(o.Dir, "agorad.yaml")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		return "", fmt.Errorf("write agorad's configuration: %w", err)
	}
	return p, nil
}

// Status is what agoractl --json status reports (the fields the chain
// looks at).
type Status struct {
	Mode           string `json:"mode"`
	Buffered       int    `json:"buffered"`
	Outbox         int    `json:"outbox"`
	Online         bool   `json:"online"`
	Transcriptions uint64 `json:"transcriptions"`
	Unconfirmed    int    `json:"unconfirmed"`
	Speaking       string `json:"speaking"`
	RepliesWaiting int    `json:"replies_waiting"`
}

// FullStatus adds the last transcription.
type FullStatus struct {
	Status
	LastUtterance *struct {
		Text string `json:"text"`
	} `json:"last_utterance"`
}

// LastText is the last transcription's text.
func (s FullStatus) LastText() string {
	if s.LastUtterance == nil {
		return ""
	}
	return s.LastUtterance.Text
}

// Ctl runs the built agoractl against agorad.
func (c *Chain) Ctl(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, filepath.Join(c.Opts.BinDir, "agoractl"), append([]string{"--socket", c.Socket}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("agoractl %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Status asks agorad through agoractl.
func (c *Chain) Status(ctx context.Context) (Status, error) {
	st, err := c.StatusFull(ctx)
	return st.Status, err
}

// StatusFull is Status with the last transcription.
func (c *Chain) StatusFull(ctx context.Context) (FullStatus, error) {
	out, err := c.Ctl(ctx, "--json", "status")
	if err != nil {
		return FullStatus{}, err
	}
	var st FullStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		return FullStatus{}, fmt.Errorf("agoractl --json status: %w: %s", err, out)
	}
	return st, nil
}

// WaitOnline waits until agorad answers and is connected to the broker.
func (c *Chain) WaitOnline(ctx context.Context, timeout time.Duration) error {
	var last error
	_, err := c.Until(ctx, timeout, func(st Status) bool { return st.Online }, &last)
	if err != nil {
		return fmt.Errorf("agorad not online: %w (last: %v)\nagorad log:\n%s", err, last, tail(c.Agorad.Log(), 4000))
	}
	return nil
}

// Until polls agorad's status until cond holds, agorad exits, or the
// deadline passes; the last status is returned either way.
func (c *Chain) Until(ctx context.Context, timeout time.Duration, cond func(Status) bool, lastErr *error) (Status, error) {
	deadline := time.Now().Add(timeout)
	var st Status
	for {
		s, err := c.Status(ctx)
		if err == nil {
			st = s
			if cond(st) {
				return st, nil
			}
		} else if lastErr != nil {
			*lastErr = err
		}
		if c.Agorad.Exited() {
			return st, errors.New("agorad exited")
		}
		if time.Now().After(deadline) {
			return st, fmt.Errorf("not within %v", timeout)
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop ends agorad (SIGTERM, so its speaker is flushed), the microphone,
// the bridge, the graph and the broker: everything Start started.
func (c *Chain) Stop() {
	if c.Agorad != nil {
		c.Agorad.Stop()
	}
	if c.stopMic != nil {
		c.stopMic()
		<-c.micErr
		c.stopMic = nil
	}
	if c.Bus != nil {
		c.Bus.Close()
	}
	if c.Bridge != nil {
		c.Bridge.Stop()
	}
	if c.Graph != nil {
		c.Graph.Stop()
	}
	if c.Broker != nil {
		c.Broker.Stop()
	}
}

// Logs is every component's log, for a failure report.
func (c *Chain) Logs() string {
	var b strings.Builder
	for _, p := range []*fleetsim.Proc{c.Agorad, c.Bridge} {
		if p != nil {
			fmt.Fprintf(&b, "==== %s\n%s\n", p.Name, tail(p.Log(), 20000))
		}
	}
	if c.Graph != nil {
		fmt.Fprintf(&b, "==== refgraph\n%s\n", tail(c.Graph.Log(), 6000))
	}
	if c.Broker != nil {
		fmt.Fprintf(&b, "==== mosquitto\n%s\n", tail(c.Broker.Log(), 3000))
	}
	return b.String()
}

func since(t time.Time) time.Duration { return time.Since(t).Round(10 * time.Millisecond) }

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
