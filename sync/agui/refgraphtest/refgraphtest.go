// Package refgraphtest runs the reference AGORA graph (refgraph/, Python,
// served by ag-ui-langgraph on uvicorn) for Go tests and benchmarks: its
// pinned venv installed once (scripts/refgraph.sh venv), its checkpoint file
// in a temporary directory, a free 127.0.0.1 port that survives Stop/Kill and
// Start (for outage tests), and typed reads of its run records
// (GET /agui/debug/threads...) to check how many graph runs each message
// produced. refgraph/README.md is the input contract.
package refgraphtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// StartTimeout bounds the wait for the server's health check (imports take
// seconds on a loaded 2-core machine).
var StartTimeout = 90 * time.Second

// Option configures the graph server.
type Option func(*config)

type config struct {
	delay        time.Duration
	rejectMarker string
	idempotent   bool
	db           string
	logLevel     string
}

// WithDelay makes every run wait d before it answers (REFGRAPH_DELAY_MS).
func WithDelay(d time.Duration) Option { return func(c *config) { c.delay = d } }

// WithRejectMarker makes a run fail with RUN_ERROR when the message (or a
// batch note) contains marker (REFGRAPH_REJECT_MARKER; default
// "[refgraph:reject]").
func WithRejectMarker(marker string) Option { return func(c *config) { c.rejectMarker = marker } }

// WithoutIdempotency makes a finished runId posted again run the graph again,
// as the bare ag-ui-langgraph adapter does (REFGRAPH_IDEMPOTENT=0).
func WithoutIdempotency() Option { return func(c *config) { c.idempotent = false } }

// WithDB puts the checkpoint file at path (default: in a temporary directory).
func WithDB(path string) Option { return func(c *config) { c.db = path } }

// WithLogLevel sets the server's log level (default warning).
func WithLogLevel(level string) Option { return func(c *config) { c.logLevel = level } }

// Graph is a running (or stopped) reference graph server.
type Graph struct {
	root, python, dir string
	port              int
	cfg               config

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  *lockedBuffer
}

var (
	venvOnce   sync.Once
	venvPython string
	venvErr    error
)

// Python installs the reference graph's venv if needed (once per process)
// and returns its python.
func Python() (string, error) {
	venvOnce.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			venvErr = err
			return
		}
		var stderr bytes.Buffer
		cmd := exec.Command("bash", filepath.Join(root, "scripts", "refgraph.sh"), "venv")
		cmd.Dir, cmd.Stderr = root, &stderr
		out, err := cmd.Output()
		if err != nil {
			venvErr = fmt.Errorf("refgraph venv: %w: %s", err, tail(stderr.String(), 2000))
			return
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		venvPython = lines[len(lines)-1]
	})
	return venvPython, venvErr
}

// RepoRoot is the directory holding go.mod, searched upwards from the
// working directory (a package's directory under go test).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "refgraph", "requirements.txt")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("refgraphtest: no go.mod with refgraph/ above the working directory")
		}
		dir = parent
	}
}

// Start runs the graph server, waits for its health check and stops it in
// t.Cleanup. It fails the test when Python or the venv cannot be set up: the
// reference graph is a real component of the bridge's tests, not optional.
func Start(t testing.TB, opts ...Option) *Graph {
	t.Helper()
	g, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		g.Stop()
		if t.Failed() {
			t.Logf("refgraph log:\n%s", tail(g.Log(), 4000))
		}
		_ = os.RemoveAll(g.dir)
	})
	return g
}

// New is Start without a testing.TB (benchmark programs): the caller Stops
// it and may remove Dir.
func New(opts ...Option) (*Graph, error) {
	cfg := config{idempotent: true, logLevel: "warning"}
	for _, o := range opts {
		o(&cfg)
	}
	python, err := Python()
	if err != nil {
		return nil, err
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "refgraph-")
	if err != nil {
		return nil, err
	}
	if cfg.db == "" {
		cfg.db = filepath.Join(dir, "checkpoints.sqlite")
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	g := &Graph{root: root, python: python, dir: dir, port: port, cfg: cfg, log: &lockedBuffer{}}
	if err := g.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return g, nil
}

// URL is the AG-UI endpoint, http://127.0.0.1:PORT/agui.
func (g *Graph) URL() string { return fmt.Sprintf("http://127.0.0.1:%d/agui", g.port) }

// Port is the server's port; it stays the same across Stop/Start.
func (g *Graph) Port() int { return g.port }

// DB is the checkpoint file.
func (g *Graph) DB() string { return g.cfg.db }

// Dir is the temporary directory New made (checkpoints, unless WithDB).
func (g *Graph) Dir() string { return g.dir }

// Log is what the server printed so far (all its starts).
func (g *Graph) Log() string { return g.log.String() }

// Start (re)starts a stopped server on the same port and checkpoint file and
// waits until it answers its health check.
func (g *Graph) Start() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cmd != nil {
		return errors.New("refgraph: already running")
	}
	cmd := exec.Command(g.python, "-m", "agora_refgraph", "--host", "127.0.0.1",
		"--port", strconv.Itoa(g.port), "--db", g.cfg.db, "--log-level", g.cfg.logLevel)
	cmd.Dir = g.root
	env := append(os.Environ(), "PYTHONPATH="+filepath.Join(g.root, "refgraph"),
		"REFGRAPH_DELAY_MS="+strconv.FormatInt(g.cfg.delay.Milliseconds(), 10))
	if g.cfg.rejectMarker != "" {
		env = append(env, "REFGRAPH_REJECT_MARKER="+g.cfg.rejectMarker)
	}
	if !g.cfg.idempotent {
		env = append(env, "REFGRAPH_IDEMPOTENT=0")
	}
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = g.log, g.log
	// Own process group: a SIGKILL of the test binary's group does not
	// depend on it, and Kill reaches only this server.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("refgraph: start %s: %w", g.python, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	g.cmd, g.done = cmd, done

	deadline := time.Now().Add(StartTimeout)
	client := &http.Client{Timeout: 2 * time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-done:
			g.cmd = nil
			return fmt.Errorf("refgraph exited at start (%v): %s", cmd.ProcessState, tail(g.log.String(), 2000))
		default:
		}
		if resp, err := client.Get(g.URL() + "/health"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	g.stopLocked(syscall.SIGKILL)
	return fmt.Errorf("refgraph not healthy on %s after %v: %s", g.URL(), StartTimeout, tail(g.log.String(), 2000))
}

// Stop sends SIGTERM (uvicorn finishes the runs in progress and closes the
// checkpointer) and waits; SIGKILL after 20 s. No-op when stopped.
func (g *Graph) Stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopLocked(syscall.SIGTERM)
}

// Kill ends the server with SIGKILL (a crash: runs in progress are lost
// mid-way; what was checkpointed stays).
func (g *Graph) Kill() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopLocked(syscall.SIGKILL)
}

func (g *Graph) stopLocked(sig syscall.Signal) {
	if g.cmd == nil {
		return
	}
	_ = g.cmd.Process.Signal(sig)
	select {
	case <-g.done:
	case <-time.After(20 * time.Second):
		_ = g.cmd.Process.Kill()
		<-g.done
	}
	g.cmd, g.done = nil, nil
}

// Run is one run record of a thread (refgraph/README.md, "Counting runs").
type Run struct {
	Token     string  `json:"token"`
	RunID     string  `json:"run_id"`
	MessageID string  `json:"message_id"`
	Kind      string  `json:"kind"` // "utterance" or "batch"
	Replay    bool    `json:"replay"`
	At        float64 `json:"at"`
}

// Thread is a thread's run records and current listen-mode state.
type Thread struct {
	ThreadID string `json:"thread_id"`
	Runs     []Run  `json:"runs"`
	// RunsByMessage counts runs that executed the graph (replays of a
	// finished runId excluded, failed runs included).
	RunsByMessage map[string]int `json:"runs_by_message"`
	// AttemptsByMessage counts every run that reached the graph.
	AttemptsByMessage map[string]int   `json:"attempts_by_message"`
	InteractionMode   string           `json:"interaction_mode"`
	MessageBuffer     []map[string]any `json:"message_buffer"`
	BufferContext     string           `json:"buffer_context"`
	FinalWritten      string           `json:"final_written"`
	FinalSpoken       string           `json:"final_spoken"`
	Answered          bool             `json:"answered"`
}

// ErrNoThread is returned by Thread for a thread without a checkpoint.
var ErrNoThread = errors.New("refgraph: no such thread")

// Thread reads a thread's records from the graph's checkpointer.
func (g *Graph) Thread(ctx context.Context, threadID string) (Thread, error) {
	var th Thread
	err := g.getJSON(ctx, "/debug/threads/"+url.PathEscape(threadID), &th)
	return th, err
}

// Threads returns, for every thread, the graph runs per message id (as
// Thread.RunsByMessage): one call for a fleet check.
func (g *Graph) Threads(ctx context.Context) (map[string]map[string]int, error) {
	var out struct {
		Threads map[string]map[string]int `json:"threads"`
	}
	err := g.getJSON(ctx, "/debug/threads", &out)
	return out.Threads, err
}

func (g *Graph) getJSON(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.URL()+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("refgraph GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("GET %s: %w", path, ErrNoThread)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("refgraph GET %s: HTTP %d", path, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("refgraph GET %s: %w", path, err)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
