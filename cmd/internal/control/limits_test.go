package control_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agora/agorad/cmd/internal/control"
	"github.com/agora/agorad/cmd/internal/control/controltest"
)

// lockedBuf collects the child's stderr while the test reads it.
type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// helperEnv makes the test binary a control server with a low file limit
// (TestHelperControlServer), so the test process itself can hold thousands
// of client connections.
const helperEnv = "AGORAD_CONTROL_HELPER"

// TestHelperControlServer is not a test: run by TestIdleConnectionsLowFDLimit
// in a child process, it serves a fake daemon under RLIMIT_NOFILE 256.
func TestHelperControlServer(t *testing.T) {
	spec := os.Getenv(helperEnv)
	if spec == "" {
		t.Skip("helper process only")
	}
	parts := strings.Split(spec, ",") // socket,maxconns,idle
	maxConns, _ := strconv.Atoi(parts[1])
	idle, _ := time.ParseDuration(parts[2])
	// Go raises the soft limit to the hard one at start; lower it now,
	// as `ulimit -n 256` would for the daemon.
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: 256, Max: 256}); err != nil {
		fmt.Fprintln(os.Stderr, "setrlimit:", err)
		os.Exit(3)
	}
	ln, err := control.Listen(parts[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	fmt.Println("ready")
	err = control.Serve(context.Background(), ln, controltest.NewFake(1), control.ServeOptions{MaxConns: maxConns, IdleTimeout: idle})
	fmt.Fprintln(os.Stderr, "Serve returned:", err)
	os.Exit(4)
}

// Issue 9, finding 6: with a low file-descriptor limit, 200 idle control
// connections made the daemon exit ("accept: too many open files"). Now
// 2,000 idle connections under RLIMIT_NOFILE 256 leave it answering status:
// with the default cap the idle ones are evicted; with a cap above the
// limit accept fails with EMFILE, is retried, and the idle timeout frees
// descriptors.
func TestIdleConnectionsLowFDLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 connections")
	}
	for _, tc := range []struct {
		name     string
		maxConns int
		idle     time.Duration
		within   time.Duration
		emfile   bool
	}{
		{"evict idle at the cap", 64, 2 * time.Minute, 3 * time.Second, false},
		{"EMFILE retried until idle timeout", 4096, time.Second, 15 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "agfd")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)
			sock := filepath.Join(dir, "s.sock")
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperControlServer$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%d,%s", helperEnv, sock, tc.maxConns, tc.idle))
			stderr := &lockedBuf{}
			cmd.Stderr = stderr
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			defer func() { cmd.Process.Kill(); <-exited }()
			if l, err := bufio.NewReader(out).ReadString('\n'); err != nil || l != "ready\n" {
				t.Fatalf("helper did not start: %q %v: %s", l, err, stderr)
			}
			go func() { exited <- cmd.Wait() }()

			conns := make([]net.Conn, 0, 2000)
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			for range 2000 {
				c, err := net.DialTimeout("unix", sock, 2*time.Second)
				if err != nil {
					break // backlog full: the server is not accepting, as intended under EMFILE
				}
				conns = append(conns, c)
			}
			t.Logf("%d idle connections open", len(conns))
			start := time.Now()
			var st control.Status
			for {
				c, err := control.Dial(sock)
				if err == nil {
					cx, cancel := context.WithTimeout(context.Background(), tc.within)
					st, err = c.Status(cx)
					cancel()
					c.Close()
				}
				if err == nil {
					break
				}
				if time.Since(start) > tc.within {
					t.Fatalf("no status within %v: %v; helper log: %s", tc.within, err, stderr)
				}
				select {
				case err := <-exited:
					t.Fatalf("control server exited: %v: %s", err, stderr)
				case <-time.After(100 * time.Millisecond):
				}
			}
			t.Logf("status answered after %v (mode %s)", time.Since(start).Round(time.Millisecond), st.Mode)
			select {
			case err := <-exited:
				t.Fatalf("control server exited: %v: %s", err, stderr)
			default:
			}
			if got := strings.Contains(stderr.String(), "accept failed"); got != tc.emfile {
				t.Errorf("accept error logged: %v, want %v: %s", got, tc.emfile, stderr)
			}
		})
	}
}
