package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/configs/configtest"
	"github.com/agora/agorad/sync/bridge/fleetsim"
	"github.com/agora/agorad/sync/uplink"
)

// The end-to-end tests' shared set-up: the reference graph, the built
// agora-bridge, and a device (the built agorad, or a store and uplink in
// this process). Each part stops at the test's cleanup.

// e2eGraph starts the reference graph (Python, under uvicorn) with a fresh
// checkpoint database. It skips under -short and where refgraph/ is absent.
func e2eGraph(t *testing.T) *fleetsim.RefGraph {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: mosquitto, agora-bridge, the reference graph (Python)")
	}
	root := repoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "refgraph")); err != nil {
		t.Skip("no refgraph/")
	}
	g, err := fleetsim.StartRefGraph(t.Context(), root, "REFGRAPH_DB="+filepath.Join(t.TempDir(), "cp.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Stop)
	return g
}

// e2eBridge runs the built agora-bridge against the broker and the AG-UI
// endpoint and returns once it has subscribed. It returns the process
// (Kill9/Start restart it) and its state directory.
func e2eBridge(t *testing.T, brokerURL, aguiURL string) (*fleetsim.Proc, string) {
	t.Helper()
	stateDir := t.TempDir()
	br := fleetsim.NewProc("bridge", "", nil, binPath, "run", "--broker", brokerURL, "--agui-url", aguiURL,
		"--state-dir", stateDir, "--log-level", "debug")
	if err := br.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(br.Stop)
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(br.Log(), "agora-bridge running") {
		if time.Now().After(deadline) {
			t.Fatalf("agora-bridge did not start:\n%s", tail(br.Log(), 3000))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// "running" is logged as the subscriptions are sent: give the broker
	// time to take them before a device speaks.
	time.Sleep(300 * time.Millisecond)
	return br, stateDir
}

// e2eStore opens a device store (no fsync: nothing here survives a power
// cut) in a fresh directory.
func e2eStore(t *testing.T) *buffer.Store {
	t.Helper()
	st, err := buffer.Open(t.TempDir(), buffer.Options{Sync: buffer.SyncNone, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// e2eUplink runs a device's uplink on st, with fast reconnects, until the
// test's cleanup (before st closes).
func e2eUplink(t *testing.T, opts uplink.Options, st *buffer.Store) *uplink.Client {
	t.Helper()
	opts.BackoffMin, opts.BackoffMax, opts.KeepAlive = 20*time.Millisecond, 500*time.Millisecond, 5*time.Second
	opts.Logger = discard()
	up, err := uplink.New(opts, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = up.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return up
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// e2eDevice is the built agorad, typed input (agoractl say), the
// weightless test models, on the test's broker.
type e2eDevice struct {
	t       *testing.T
	Cfg     *configs.Config
	CfgPath string
	Agorad  string // the built binary (for doctor)
	ctl     string
	proc    *fleetsim.Proc
}

// e2eAgorad builds agorad and agoractl, writes a configuration for
// deviceID in listen mode on brokerURL (configtest's, then set adjusts it),
// and runs the daemon.
func e2eAgorad(t *testing.T, brokerURL, deviceID string, set func(*configs.Config)) *e2eDevice {
	t.Helper()
	d := &e2eDevice{t: t, Agorad: buildTool(t, "github.com/agora/agorad/cmd/agorad"), ctl: buildTool(t, "github.com/agora/agorad/cmd/agoractl")}
	cfg := configtest.Daemon(t, deviceID, brokerURL)
	cfg.Mode = "listen"
	if set != nil {
		set(cfg)
	}
	yb, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d.Cfg, d.CfgPath = cfg, filepath.Join(t.TempDir(), "agorad.yaml")
	if err := os.WriteFile(d.CfgPath, yb, 0o600); err != nil {
		t.Fatal(err)
	}
	d.proc = fleetsim.NewProc("agorad", "", nil, d.Agorad, "run", "-c", d.CfgPath)
	if err := d.proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.proc.Stop)
	return d
}

// Log is what the daemon wrote.
func (d *e2eDevice) Log() string { return d.proc.Log() }

// Ctl runs agoractl on the daemon's socket, waiting for the socket to
// answer (the model loads first), and fails the test if the command fails.
func (d *e2eDevice) Ctl(args ...string) string {
	d.t.Helper()
	var out []byte
	var err error
	for range 600 {
		out, err = exec.Command(d.ctl, append([]string{"--socket", d.Cfg.Control.Socket}, args...)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "not running") && !strings.Contains(string(out), "connect") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		d.t.Fatalf("agoractl %v: %v: %s\nagorad log:\n%s", args, err, out, tail(d.Log(), 4000))
	}
	return string(out)
}
