package uplink

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/brokertest"
)

const (
	envK9Dir    = "AGORAD_UPLINK_K9_DIR"
	envK9Broker = "AGORAD_UPLINK_K9_BROKER"
	envK9Mode   = "AGORAD_UPLINK_K9_MODE"
	k9Device    = "k9dev"
)

// TestKill9Child is the child process of TestKill9: it is a no-op unless
// TestKill9 re-executes the test binary with the environment set. It runs
// a real store and uplink and prints "ACCEPT <seq> <id>" for every utterance
// the store accepted ("produce"), or drains and prints "DRAINED" ("drain").
func TestKill9Child(t *testing.T) {
	dir := os.Getenv(envK9Dir)
	if dir == "" {
		t.Skip("child of TestKill9 only")
	}
	logf, _ := os.OpenFile(filepath.Join(dir, "child.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	log := slog.New(slog.NewTextHandler(logf, nil))
	st, err := buffer.Open(filepath.Join(dir, "state"), buffer.Options{Logger: log}) // default: fsync every write
	if err != nil {
		fmt.Println("ERROR open store:", err)
		os.Exit(2)
	}
	opts := testOptions(k9Device, os.Getenv(envK9Broker))
	opts.Logger = log
	c, err := New(opts, st, nil)
	if err != nil {
		fmt.Println("ERROR uplink:", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	go func() {
		for on := range c.OnlineChanged() {
			if on {
				fmt.Println("ONLINE")
			}
		}
	}()
	if os.Getenv(envK9Mode) == "drain" {
		for {
			n, err := st.OutboxCount()
			if err == nil && n == 0 && c.Online() {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		<-done
		st.Close()
		fmt.Println("DRAINED")
		return
	}
	for i := 0; ; i++ {
		e, err := st.EnqueueUtterance(buffer.Record{Text: fmt.Sprintf("k9 %d", i), Source: "typed", Offline: !c.Online()})
		if err != nil {
			fmt.Println("ERROR enqueue:", err)
			os.Exit(2)
		}
		fmt.Printf("ACCEPT %d %s\n", e.Seq, e.ID)
		time.Sleep(time.Duration(rand.IntN(4)) * time.Millisecond)
	}
}

// (g) SIGKILL the device process at random points, with the broker
// sometimes down and sometimes up: every accepted utterance is delivered, in
// seq order after de-duplication.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto, many child processes")
	}
	if os.Getenv(envK9Dir) != "" {
		t.Skip("in the child")
	}
	b := brokertest.Start(t)
	sub := b.Subscribe(t, "agora/v1/"+k9Device+"/utterances")
	dir := t.TempDir()
	accepted := map[string]uint64{}
	var order []string

	run := func(mode string, wait func(*exec.Cmd, *outLines)) *outLines {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKill9Child$", "-test.count=1")
		cmd.Env = append(os.Environ(), envK9Dir+"="+dir, envK9Broker+"="+b.URL(), envK9Mode+"="+mode)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatalf("start child: %v", err)
		}
		out := &outLines{}
		readDone := make(chan struct{})
		go func() { defer close(readDone); out.read(stdout) }()
		wait(cmd, out)
		<-readDone
		_ = cmd.Wait()
		for _, l := range out.all() {
			if strings.HasPrefix(l, "ERROR") {
				t.Fatalf("child: %s", l)
			}
			f := strings.Fields(l)
			if len(f) == 3 && f[0] == "ACCEPT" {
				seq, err := strconv.ParseUint(f[1], 10, 64)
				if err != nil {
					t.Fatalf("child printed %q", l)
				}
				accepted[f[2]] = seq
				order = append(order, f[2])
			}
		}
		return out
	}

	const kills = 24
	var lastOut *outLines
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	downKills, onlineKills := 0, 0
	for i := range kills {
		// Alternate outage periods so kills land both while buffering
		// (broker down) and while draining a backlog (broker up).
		if i%4 == 0 {
			if b.Running() {
				b.Stop()
			} else {
				b.Start()
			}
		}
		if !b.Running() {
			downKills++
		}
		before := len(accepted)
		lastOut = run("produce", func(cmd *exec.Cmd, out *outLines) {
			// Wait until it produces, then kill at a random later moment.
			deadline := time.Now().Add(20 * time.Second)
			for out.count() == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(time.Duration(20+rng.IntN(400)) * time.Millisecond)
			_ = cmd.Process.Signal(syscall.SIGKILL)
		})
		if out := lastOut; out.has("ONLINE") {
			onlineKills++ // killed while connected: draining the backlog and new input
		}
		t.Logf("kill %d (broker running=%v): %d accepted in this run", i+1, b.Running(), len(accepted)-before)
	}
	b.Start()
	out := run("drain", func(cmd *exec.Cmd, out *outLines) {
		deadline := time.Now().Add(60 * time.Second)
		for !out.has("DRAINED") && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if !out.has("DRAINED") {
			_ = cmd.Process.Signal(syscall.SIGKILL)
		}
	})
	if !out.has("DRAINED") {
		log, _ := os.ReadFile(filepath.Join(dir, "child.log"))
		t.Fatalf("final drain did not finish; child log tail:\n%s", tail(string(log), 2000))
	}
	if len(accepted) == 0 || downKills == 0 || onlineKills == 0 {
		t.Fatalf("nothing accepted (%d), or no kill while the broker was down (%d) or while connected (%d)", len(accepted), downKills, onlineKills)
	}
	msgs, ok := sub.WaitFor(30*time.Second, func(m []brokertest.Message) bool {
		seen := map[string]bool{}
		for _, w := range decode(t, m) {
			seen[w.ID] = true
		}
		for id := range accepted {
			if !seen[id] {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Error("not every accepted utterance arrived")
	}
	checkDelivery(t, decode(t, msgs), accepted)
	t.Logf("%d kills (%d with the broker down, %d while connected), %d utterances accepted", kills, downKills, onlineKills, len(accepted))
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// outLines collects complete stdout lines of a child (a line cut by SIGKILL
// is dropped: the child had not finished reporting it).
type outLines struct {
	mu    sync.Mutex
	lines []string
}

func (o *outLines) read(r io.Reader) {
	br := bufio.NewReader(r)
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			return
		}
		o.mu.Lock()
		o.lines = append(o.lines, strings.TrimSuffix(l, "\n"))
		o.mu.Unlock()
	}
}

func (o *outLines) all() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.lines...)
}

func (o *outLines) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.lines)
}

func (o *outLines) has(s string) bool {
	for _, l := range o.all() {
		if l == s {
			return true
		}
	}
	return false
}
