// Command bridgebench measures agora-bridge: runs/s and end-to-end latency
// (device enqueue → reply received, p50/p99) with 1,000 simulated devices
// (the real uplink, one MQTT connection each), a graph that answers in 0 ms
// and in 500 ms, one bridge (mosquitto mode, and nats mode) and three
// bridges (nats mode); and the bridge's own overhead per run against a
// direct AG-UI POST to the same graph, measured in the same run.
//
// Load: closed loop, each device sends its next message when the reply to
// the previous one arrived (no think time), so every figure is at
// saturation: latency is mostly queueing.
//
//	go run ./bench/bridgebench -devices 1000 -messages 3 -graph ref
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"

	"github.com/agora/agorad/sync/agui"
	"github.com/agora/agorad/sync/agui/aguitest"
	"github.com/agora/agorad/sync/bridge/fleetsim"
	"github.com/agora/agorad/sync/brokertest"
)

type result struct {
	name          string
	runs          int
	elapsed       time.Duration
	p50, p99      time.Duration
	replies, lost int
}

func main() {
	devices := flag.Int("devices", 1000, "simulated devices")
	messages := flag.Int("messages", 3, "messages per device (closed loop)")
	graphKind := flag.String("graph", "ref", "ref (refgraph/, Python) or fake (in-process Go double)")
	delays := flag.String("delays", "0,500", "graph answer delays in ms")
	partitions := flag.Int("partitions", 64, "JetStream partitions")
	scenarios := flag.String("scenarios", "mosquitto-1,nats-1,nats-3", "bridge set-ups")
	overheadN := flag.Int("overhead", 200, "sequential runs for the overhead comparison")
	flag.Parse()
	work, err := os.MkdirTemp("", "bridgebench")
	check(err)
	defer os.RemoveAll(work)
	bin := filepath.Join(work, "agora-bridge")
	out, err := exec.Command("go", "build", "-o", bin, "./cmd/agora-bridge").CombinedOutput()
	if err != nil {
		fail("build agora-bridge: %v\n%s", err, out)
	}
	fmt.Printf("bridgebench: %d devices × %d messages, graph %s, partitions %d, GOMAXPROCS-visible CPUs %d\n",
		*devices, *messages, *graphKind, *partitions, numCPU())
	var results []result
	var overhead []string
	for _, ds := range strings.Split(*delays, ",") {
		delay, err := strconv.Atoi(ds)
		check(err)
		url, stop := startGraph(*graphKind, work, delay)
		for _, sc := range strings.Split(*scenarios, ",") {
			if sc == "" {
				continue
			}
			r := runScenario(sc, bin, work, url, *devices, *messages, *partitions, delay)
			results = append(results, r)
			fmt.Printf("  %-22s %5d runs in %7.2fs = %6.1f runs/s  p50 %7v  p99 %7v  replies %d lost %d\n",
				r.name, r.runs, r.elapsed.Seconds(), float64(r.runs)/r.elapsed.Seconds(), r.p50, r.p99, r.replies, r.lost)
		}
		if *overheadN > 0 {
			overhead = append(overhead, measureOverhead(bin, work, url, delay, *overheadN))
		}
		stop()
	}
	fmt.Println()
	fmt.Println("| graph delay | set-up | runs | runs/s | p50 | p99 | replies lost |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, r := range results {
		fmt.Printf("| %s | %d | %.1f | %v | %v | %d |\n", r.name, r.runs, float64(r.runs)/r.elapsed.Seconds(),
			r.p50.Round(time.Millisecond), r.p99.Round(time.Millisecond), r.lost)
	}
	fmt.Println()
	fmt.Println("| graph delay | direct POST p50 | via bridge p50 | bridge overhead p50 | direct p99 | via bridge p99 |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, o := range overhead {
		fmt.Println(o)
	}
}

func numCPU() int {
	b, _ := exec.Command("nproc").Output()
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

func check(err error) {
	if err != nil {
		fail("%v", err)
	}
}

func fail(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "bridgebench: "+f+"\n", a...)
	os.Exit(1)
}

func startGraph(kind, work string, delayMS int) (string, func()) {
	if kind == "fake" {
		s := aguitest.Start()
		s.Delay = time.Duration(delayMS) * time.Millisecond
		return s.URL, s.Close
	}
	root, _ := os.Getwd()
	g, err := fleetsim.StartRefGraph(context.Background(), root, "REFGRAPH_DELAY_MS="+strconv.Itoa(delayMS),
		"REFGRAPH_DB="+filepath.Join(work, fmt.Sprintf("graph-%d-%d.sqlite", delayMS, time.Now().UnixNano())))
	check(err)
	return g.URL(), g.Stop
}

type broker struct {
	mqttURL, natsURL string
	stop             func()
}

func startBroker(kind, work string, partitions int) broker {
	dir, err := os.MkdirTemp(work, kind)
	check(err)
	if kind == "mosquitto" {
		b, err := brokertest.New(dir, brokertest.WithConfig("max_inflight_messages 0", "max_connections -1"))
		check(err)
		check(b.Run())
		return broker{mqttURL: b.URL(), stop: b.Stop}
	}
	n, err := brokertest.NewNATS(dir, partitions)
	check(err)
	check(n.Run())
	return broker{mqttURL: n.MQTTURL(), natsURL: n.URL(), stop: n.Stop}
}

func startBridges(bin, work string, b broker, n, partitions int, agentURL string) []*fleetsim.Proc {
	var procs []*fleetsim.Proc
	for i := range n {
		state, err := os.MkdirTemp(work, "state")
		check(err)
		args := []string{bin, "run", "--broker", b.mqttURL, "--agui-url", agentURL, "--state-dir", state,
			"--client-id", fmt.Sprintf("bench-bridge-%d-%d", i, time.Now().UnixNano()), "--log-level", "error"}
		if b.natsURL != "" {
			args = append(args, "--nats", b.natsURL, "--partitions", strconv.Itoa(partitions))
		}
		p := fleetsim.NewProc(fmt.Sprintf("bridge-%d", i), "", nil, args...)
		check(p.Start())
		procs = append(procs, p)
	}
	return procs
}

func runScenario(sc, bin, work, agentURL string, devices, messages, partitions, delay int) result {
	kind, ns, _ := strings.Cut(sc, "-")
	nb, _ := strconv.Atoi(ns)
	b := startBroker(kind, work, partitions)
	defer b.stop()
	procs := startBridges(bin, work, b, nb, partitions, agentURL)
	defer func() {
		for _, p := range procs {
			p.Stop()
		}
	}()
	col, err := fleetsim.Collect(b.mqttURL, fmt.Sprintf("bench-collector-%d", time.Now().UnixNano()))
	check(err)
	defer col.Close()
	ctx, cancel := context.WithCancel(context.Background())
	fleet, err := fleetsim.Start(ctx, devices, fmt.Sprintf("b%d", time.Now().UnixNano()%100000), b.mqttURL)
	check(err)
	defer func() { cancel(); fleet.Wait() }()
	check(fleet.WaitOnline(5 * time.Minute))
	time.Sleep(2 * time.Second) // bridges subscribed / consumers bound
	var mu sync.Mutex
	var lat []time.Duration
	lost := 0
	start := time.Now()
	var wg sync.WaitGroup
	for _, d := range fleet.Devices {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range messages {
				e, err := d.Outbox.Say(fmt.Sprintf("question %d from %s", j, d.ID))
				check(err)
				deadline := time.Now().Add(10 * time.Minute)
				for {
					if r, ok := col.Reply(e.ID); ok {
						mu.Lock()
						lat = append(lat, r.At.Sub(e.CreatedAt))
						mu.Unlock()
						break
					}
					if time.Now().After(deadline) {
						mu.Lock()
						lost++
						mu.Unlock()
						return
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	return result{name: fmt.Sprintf("%d ms | %s", delay, sc), runs: len(lat), elapsed: elapsed,
		p50: fleetsim.Percentile(lat, 50), p99: fleetsim.Percentile(lat, 99), replies: len(lat), lost: lost}
}

// measureOverhead compares, one run at a time and alternating (so both see
// the same machine load and the same thread growth), a direct AG-UI POST
// with the same turn through device → mosquitto → bridge → graph → reply.
func measureOverhead(bin, work, agentURL string, delay, n int) string {
	c := agui.New(agentURL, 4, time.Minute)
	b := startBroker("mosquitto", work, 1)
	defer b.stop()
	procs := startBridges(bin, work, b, 1, 1, agentURL)
	defer procs[0].Stop()
	col, err := fleetsim.Collect(b.mqttURL, fmt.Sprintf("overhead-collector-%d", time.Now().UnixNano()))
	check(err)
	defer col.Close()
	ctx, cancel := context.WithCancel(context.Background())
	fleet, err := fleetsim.Start(ctx, 1, fmt.Sprintf("ovh%d", time.Now().UnixNano()%100000), b.mqttURL)
	check(err)
	defer func() { cancel(); fleet.Wait() }()
	check(fleet.WaitOnline(time.Minute))
	time.Sleep(time.Second)
	d := fleet.Devices[0]
	thread := fmt.Sprintf("direct-%d", time.Now().UnixNano())
	var direct, via []time.Duration
	for i := range n {
		id := fmt.Sprintf("019d0000-0000-7000-8000-%012d", time.Now().UnixNano()%1e12)
		in := types.RunAgentInput{ThreadID: thread, RunID: "run-" + id, State: map[string]any{},
			Messages: []types.Message{{ID: id, Role: types.RoleUser, Content: fmt.Sprintf("question %d", i)}},
			Tools:    []types.Tool{}, Context: []types.Context{}, ForwardedProps: map[string]any{"interactionMode": "feedback"}}
		t0 := time.Now()
		if _, err := c.Run(context.Background(), in); err != nil {
			fail("direct run: %v", err)
		}
		direct = append(direct, time.Since(t0))

		e, err := d.Outbox.Say(fmt.Sprintf("question %d", i))
		check(err)
		for {
			if r, ok := col.Reply(e.ID); ok {
				via = append(via, r.At.Sub(e.CreatedAt))
				break
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	dp50, vp50 := fleetsim.Percentile(direct, 50), fleetsim.Percentile(via, 50)
	return fmt.Sprintf("| %d ms | %v | %v | %v (%.2f×) | %v | %v |", delay, dp50.Round(100*time.Microsecond),
		vp50.Round(100*time.Microsecond), (vp50 - dp50).Round(100*time.Microsecond), float64(vp50)/float64(dp50),
		fleetsim.Percentile(direct, 99).Round(100*time.Microsecond), fleetsim.Percentile(via, 99).Round(100*time.Microsecond))
}

var _ = slog.New(slog.NewTextHandler(io.Discard, nil))
