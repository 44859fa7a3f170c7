package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/agui/aguitest"
	"github.com/agora/agorad/sync/bridge"
	"github.com/agora/agorad/sync/bridge/fleetsim"
	"github.com/agora/agorad/sync/brokertest"
)

// graph is the agent the fleet tests run against: the reference graph
// (refgraph/, its runs counted in its own checkpointer) when the repository
// has it, else the in-process double.
type graph struct {
	url  string
	ref  *fleetsim.RefGraph
	fake *aguitest.Server
}

func repoRoot(t testing.TB) string {
	wd, _ := os.Getwd()
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

func startGraph(t *testing.T, env ...string) *graph {
	t.Helper()
	root := repoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "refgraph")); err == nil && os.Getenv("AGORA_GRAPH") != "fake" {
		env = append(env, "REFGRAPH_DB="+filepath.Join(t.TempDir(), "checkpoints.sqlite"))
		g, err := fleetsim.StartRefGraph(t.Context(), root, env...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(g.Stop)
		return &graph{url: g.URL(), ref: g}
	}
	t.Log("refgraph/ not present: using the in-process AG-UI double")
	f := aguitest.Start()
	f.Idempotent = true
	t.Cleanup(f.Close)
	return &graph{url: f.URL, fake: f}
}

// runsByMessage is the graph's count of runs per device message id.
func (g *graph) runsByMessage(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	if g.ref != nil {
		threads, err := g.ref.Runs()
		if err != nil {
			t.Fatal(err)
		}
		for _, msgs := range threads {
			for id, n := range msgs {
				out[id] += n
			}
		}
		return out
	}
	for run, n := range g.fake.Effective() {
		out[run[len("run-"):]] = n
	}
	return out
}

// orderOf is the order in which the graph ran a device's messages.
func (g *graph) orderOf(t *testing.T, device string) []string {
	t.Helper()
	var ids []string
	seen := map[string]bool{}
	if g.ref != nil {
		th, err := g.ref.Thread(device)
		if err != nil {
			t.Fatal(err)
		}
		runs, _ := th["runs"].([]any)
		for _, r := range runs {
			id, _ := r.(map[string]any)["message_id"].(string)
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		return ids
	}
	for _, r := range g.fake.Runs() {
		if r.ThreadID == device && !seen[r.Messages[0].ID] {
			seen[r.Messages[0].ID] = true
			ids = append(ids, r.Messages[0].ID)
		}
	}
	return ids
}

func fleetOnly(t *testing.T) {
	if os.Getenv("AGORA_FLEET") == "" {
		t.Skip("fleet test: run with `make test-fleet` (AGORA_FLEET=1)")
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// startFleetBridges runs n agora-bridge processes in fleet mode.
func startFleetBridges(t *testing.T, n int, nats *brokertest.NATS, partitions int, agentURL string) []*fleetsim.Proc {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "bridge.yaml")
	os.WriteFile(cfg, []byte("jetstream:\n  ack_wait: 5s\nretry:\n  initial: 200ms\n  max: 5s\n  max_elapsed: 5m\nmetrics:\n  per_device: false\n"), 0o600)
	var procs []*fleetsim.Proc
	for i := range n {
		p := fleetsim.NewProc(fmt.Sprintf("bridge-%d", i), "", nil, binPath, "run", "-c", cfg, "--broker", nats.MQTTURL(),
			"--nats", nats.URL(), "--partitions", strconv.Itoa(partitions), "--agui-url", agentURL,
			"--state-dir", filepath.Join(t.TempDir(), "state"), "--client-id", fmt.Sprintf("agora-bridge-%d", i), "--log-level", "warn")
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Stop)
		procs = append(procs, p)
	}
	waitStream(t, nats)
	return procs
}

// waitStream waits until a bridge has made the stream that keeps the
// devices' data: a device's message published before it exists is
// acknowledged by the server and kept nowhere.
func waitStream(t *testing.T, srv *brokertest.NATS) {
	t.Helper()
	nc, err := natsgo.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if _, err := js.StreamInfo("AGORA_IN"); err == nil {
			return
		} else if time.Now().After(end) {
			t.Fatalf("no bridge made the stream AGORA_IN within a minute: %v", err)
		}
	}
}

// TestFleetExactlyOnce: 3 bridges, 200 devices (the real uplink, one MQTT
// connection each) × 20 messages through nats-server; one bridge is kill -9'd
// mid-run and restarted. Every message: exactly one graph run (the graph's
// own count), per-device order held, a reply and an ack delivered. Without
// AGORA_FLEET (make test) the same test runs short: 6 devices × 5 messages
// on 4 partitions, the bridge still killed once.
func TestFleetExactlyOnce(t *testing.T) {
	devices, perDevice, partitions := envInt("FLEET_DEVICES", 200), envInt("FLEET_MESSAGES", 20), envInt("FLEET_PARTITIONS", 32)
	if os.Getenv("AGORA_FLEET") == "" {
		devices, perDevice, partitions = 6, 5, 4
	}
	nats := brokertest.StartNATS(t, partitions)
	g := startGraph(t)
	bridges := startFleetBridges(t, 3, nats, partitions, g.url)
	col, err := fleetsim.Collect(nats.MQTTURL(), "fleet-collector")
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	ctx, cancel := context.WithCancel(context.Background())
	fleet, err := fleetsim.Start(ctx, devices, "fd", nats.MQTTURL())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); fleet.Wait() }()
	if err := fleet.WaitOnline(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	entries := map[string][]buffer.Entry{}
	for j := range perDevice {
		for _, d := range fleet.Devices {
			e, _ := d.Outbox.Say(fmt.Sprintf("question %d from %s", j, d.ID))
			entries[d.ID] = append(entries[d.ID], e)
		}
	}
	total := devices * perDevice
	col.WaitAcked(total/3, 10*time.Minute)
	killedAt := col.Acked()
	bridges[1].Kill9()
	t.Logf("kill -9 bridge-1 after %d of %d acked (%v)", killedAt, total, time.Since(start).Round(time.Millisecond))
	time.Sleep(time.Second)
	if err := bridges[1].Start(); err != nil {
		t.Fatal(err)
	}
	if !col.WaitAcked(total, 15*time.Minute) {
		t.Fatalf("only %d of %d acked\nbridge-0: %s", col.Acked(), total, bridges[0].Log())
	}
	elapsed := time.Since(start)
	time.Sleep(2 * time.Second) // late duplicates, if any, would show now
	runs := g.runsByMessage(t)
	var missingReply, wrongRuns int
	var lat []time.Duration
	for dev, es := range entries {
		for _, e := range es {
			if n := runs[e.ID]; n != 1 {
				wrongRuns++
				if wrongRuns <= 10 {
					t.Errorf("message %s of %s: %d graph runs, want 1", e.ID, dev, n)
				}
			}
			r, ok := col.Reply(e.ID)
			if !ok || r.Device != dev {
				missingReply++
				if missingReply <= 10 {
					t.Errorf("message %s of %s: reply %v on %q", e.ID, dev, ok, r.Device)
				}
				continue
			}
			lat = append(lat, r.At.Sub(e.CreatedAt))
		}
		got := g.orderOf(t, dev)
		var want []string
		for _, e := range es {
			want = append(want, e.ID)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("device %s: graph order %v, want %v", dev, got, want)
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	t.Logf("%d devices × %d messages in %v (%.0f runs/s); latency p50 %v p99 %v; %d messages with a run count ≠ 1, %d without reply",
		devices, perDevice, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds(),
		fleetsim.Percentile(lat, 50).Round(time.Millisecond), fleetsim.Percentile(lat, 99).Round(time.Millisecond), wrongRuns, missingReply)
	_ = bridge.RunID
}

// TestFleetGraphDown30s: the graph stops for 30 s mid-run: nothing is lost,
// each device's runs resume in order, none is parked.
func TestFleetGraphDown30s(t *testing.T) {
	fleetOnly(t)
	const devices, perDevice, partitions = 20, 10, 8
	nats := brokertest.StartNATS(t, partitions)
	g := startGraph(t)
	if g.ref == nil {
		t.Skip("needs the reference graph process to stop and restart")
	}
	startFleetBridges(t, 2, nats, partitions, g.url)
	col, err := fleetsim.Collect(nats.MQTTURL(), "down-collector")
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	ctx, cancel := context.WithCancel(context.Background())
	fleet, err := fleetsim.Start(ctx, devices, "gd", nats.MQTTURL())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); fleet.Wait() }()
	if err := fleet.WaitOnline(time.Minute); err != nil {
		t.Fatal(err)
	}
	entries := map[string][]buffer.Entry{}
	say := func(j int) {
		for _, d := range fleet.Devices {
			e, _ := d.Outbox.Say(fmt.Sprintf("question %d from %s", j, d.ID))
			entries[d.ID] = append(entries[d.ID], e)
		}
	}
	for j := range perDevice / 2 {
		say(j)
	}
	col.WaitAcked(devices*perDevice/4, 2*time.Minute)
	g.ref.Stop()
	down := time.Now()
	for j := perDevice / 2; j < perDevice; j++ {
		say(j)
	}
	time.Sleep(30 * time.Second)
	ackedWhileDown := col.Acked()
	if err := g.ref.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Logf("graph down %v; %d acked before restart", time.Since(down).Round(time.Second), ackedWhileDown)
	if !col.WaitAcked(devices*perDevice, 5*time.Minute) {
		t.Fatalf("only %d of %d acked after the graph came back", col.Acked(), devices*perDevice)
	}
	runs := g.runsByMessage(t)
	for dev, es := range entries {
		var want []string
		for _, e := range es {
			want = append(want, e.ID)
			if _, ok := col.Reply(e.ID); !ok {
				t.Errorf("%s: no reply to %s", dev, e.ID)
			}
			if runs[e.ID] < 1 {
				t.Errorf("%s: %s never ran", dev, e.ID)
			}
		}
		if got := g.orderOf(t, dev); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("device %s: graph order %v, want %v", dev, got, want)
		}
	}
}
