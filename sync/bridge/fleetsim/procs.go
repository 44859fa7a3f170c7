package fleetsim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Proc is a child process in its own process group.
type Proc struct {
	Name string
	args []string
	env  []string
	dir  string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() > 8<<20 { // keep memory bounded on long runs
		s.b.Reset()
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// NewProc prepares name with args (args[0] is the program).
func NewProc(name, dir string, env []string, args ...string) *Proc {
	return &Proc{Name: name, args: args, env: env, dir: dir, log: &syncBuffer{}}
}

// Start starts (or restarts) the process.
func (p *Proc) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	cmd := exec.Command(p.args[0], p.args[1:]...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = p.log, p.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	p.cmd, p.done = cmd, done
	return nil
}

// Kill9 kills the whole process group with SIGKILL and waits.
func (p *Proc) Kill9() { p.signal(syscall.SIGKILL) }

// Stop sends SIGTERM to the group and waits (SIGKILL after 20s).
func (p *Proc) Stop() { p.signal(syscall.SIGTERM) }

func (p *Proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	p.cmd = nil
}

// Exited reports whether the process ended by itself.
func (p *Proc) Exited() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return true
	}
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Log is what the process wrote.
func (p *Proc) Log() string { return p.log.String() }

// FreePort returns a free loopback port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// RefGraph is the reference graph served by `make reference-graph PORT=N`.
type RefGraph struct {
	*Proc
	Port int
}

// URL is its AG-UI endpoint.
func (g *RefGraph) URL() string { return fmt.Sprintf("http://127.0.0.1:%d/agui", g.Port) }

// StartRefGraph serves refgraph/ from repoRoot with extra environment
// (REFGRAPH_DB, REFGRAPH_DELAY_MS, …) and waits until it answers.
func StartRefGraph(ctx context.Context, repoRoot string, env ...string) (*RefGraph, error) {
	if _, err := os.Stat(filepath.Join(repoRoot, "refgraph")); err != nil {
		return nil, fmt.Errorf("no refgraph/ in %s: %w", repoRoot, err)
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	g := &RefGraph{Port: port, Proc: NewProc("refgraph", repoRoot, env, "make", "--no-print-directory", "reference-graph", fmt.Sprintf("PORT=%d", port))}
	if err := g.Start(); err != nil {
		return nil, err
	}
	if err := g.WaitHealthy(ctx, 5*time.Minute); err != nil {
		g.Stop()
		return nil, err
	}
	return g, nil
}

// Restart starts a stopped graph again on the same port.
func (g *RefGraph) Restart(ctx context.Context) error {
	if err := g.Start(); err != nil {
		return err
	}
	return g.WaitHealthy(ctx, 2*time.Minute)
}

// WaitHealthy polls GET /agui/health.
func (g *RefGraph) WaitHealthy(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(g.URL() + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		if g.Exited() {
			return fmt.Errorf("reference graph exited: %s", tail(g.Log(), 2000))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("reference graph not healthy after %v: %s", timeout, tail(g.Log(), 2000))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Runs returns, per thread, the graph's own count of runs per message id
// (GET /agui/debug/threads, read from its checkpointer).
func (g *RefGraph) Runs() (map[string]map[string]int, error) {
	resp, err := http.Get(g.URL() + "/debug/threads")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var v struct {
		Threads map[string]map[string]int `json:"threads"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return nil, fmt.Errorf("decode /debug/threads: %w", err)
	}
	return v.Threads, nil
}

// Thread returns GET /agui/debug/threads/{id}.
func (g *RefGraph) Thread(id string) (map[string]any, error) {
	resp, err := http.Get(g.URL() + "/debug/threads/" + id)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
