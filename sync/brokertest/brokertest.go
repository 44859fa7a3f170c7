// Package brokertest runs a real mosquitto for tests: its own config and
// persistence in t.TempDir(), a free 127.0.0.1 port that survives Stop and
// Start (for outage tests), optional password and TLS listeners, a
// Subscriber that records what reaches a topic filter, and a Log that keeps
// what a client under test logged.
package brokertest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Binary is the mosquitto executable used by Start.
var Binary = "/usr/sbin/mosquitto"

// Option configures the broker started by Start.
type Option func(*config)

type config struct {
	users                 map[string]string
	caFile, certFile, key string
	requireCert           bool
	acl                   []string
	extra                 []string
}

// WithPassword requires username/password auth (anonymous refused); the
// password file is made with mosquitto_passwd -b.
func WithPassword(user, password string) Option {
	return func(c *config) {
		if c.users == nil {
			c.users = map[string]string{}
		}
		c.users[user] = password
	}
}

// WithTLS makes the listener TLS-only with the given PEM files. With
// requireClientCert, clients must present a certificate signed by caFile.
func WithTLS(caFile, certFile, keyFile string, requireClientCert bool) Option {
	return func(c *config) {
		c.caFile, c.certFile, c.key, c.requireCert = caFile, certFile, keyFile, requireClientCert
	}
}

// WithACL gives the broker an acl_file with these lines (mosquitto's
// syntax: "user NAME", "topic [read|write|readwrite|deny] FILTER",
// "pattern ..."). SetACL rewrites it and Reload applies it. With an ACL, a
// publish the ACL denies is still PUBACKed under MQTT 3.1.1 and then
// dropped, the case end-to-end confirmation exists for. mosquitto before
// 2.0.22 then also closes the client's connection, because of
// max_queued_messages 0 (see writeConfig); WithConfig("max_queued_messages
// 1000") keeps it open.
func WithACL(lines ...string) Option {
	return func(c *config) { c.acl = append([]string{}, lines...) }
}

// WithConfig appends raw mosquitto.conf lines.
func WithConfig(lines ...string) Option {
	return func(c *config) { c.extra = append(c.extra, lines...) }
}

// Broker is a running (or stopped) mosquitto owned by a test.
type Broker struct {
	t    testing.TB // nil for brokers made by New
	dir  string
	port int
	conf string
	tls  bool

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  *bytes.Buffer
}

// Start runs mosquitto on a free loopback port, waits until it accepts TCP
// connections and stops it in t.Cleanup.
func Start(t testing.TB, opts ...Option) *Broker {
	t.Helper()
	if _, err := os.Stat(Binary); err != nil {
		t.Skipf("mosquitto not installed (%s): %v", Binary, err)
	}
	b, err := New(t.TempDir(), opts...)
	if err != nil {
		t.Fatalf("brokertest: %v", err)
	}
	b.t = t
	t.Cleanup(b.Stop)
	b.Start()
	return b
}

// New prepares a broker in dir (config, password file, persistence) on a
// free loopback port without starting it; Run starts it. For programs such
// as benchmarks; tests use Start.
func New(dir string, opts ...Option) (*Broker, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	b := &Broker{dir: dir, port: port, tls: cfg.certFile != ""}
	if err := b.writeConfig(cfg); err != nil {
		return nil, err
	}
	return b, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (b *Broker) writeConfig(cfg config) error {
	lines := []string{
		fmt.Sprintf("listener %d 127.0.0.1", b.port),
		// Started as root, mosquitto drops to user "mosquitto", which cannot
		// read the test's private temp dir: stay the current user.
		"user " + currentUser(),
		"persistence true",
		"persistence_location " + b.dir + "/",
		"autosave_interval 1",
		// 0 = unlimited: a test subscriber must not lose queued messages. But
		// mosquitto before 2.0.22 reads it as a quota of 0 after a publish it
		// refuses (ACL denied: mosquitto issue 3244) and closes that client's
		// connection; the PUBACK it queued just before may be lost with it.
		"max_queued_messages 0",
		"max_inflight_messages 100",
		"set_tcp_nodelay true",
		"log_dest stderr",
		"log_type error",
		"log_type warning",
		"log_type notice",
	}
	if len(cfg.users) > 0 {
		pw := filepath.Join(b.dir, "passwd")
		if err := os.WriteFile(pw, nil, 0o600); err != nil {
			return fmt.Errorf("create password file: %w", err)
		}
		for u, p := range cfg.users {
			if out, err := exec.Command("mosquitto_passwd", "-b", pw, u, p).CombinedOutput(); err != nil {
				return fmt.Errorf("mosquitto_passwd for user %s: %v: %s", u, err, out)
			}
		}
		lines = append(lines, "allow_anonymous false", "password_file "+pw)
	} else {
		lines = append(lines, "allow_anonymous true")
	}
	if cfg.certFile != "" {
		lines = append(lines, "cafile "+cfg.caFile, "certfile "+cfg.certFile, "keyfile "+cfg.key)
		if cfg.requireCert {
			lines = append(lines, "require_certificate true")
		}
	}
	if cfg.acl != nil {
		if err := b.SetACL(cfg.acl...); err != nil {
			return err
		}
		lines = append(lines, "acl_file "+b.aclPath())
	}
	lines = append(lines, cfg.extra...)
	b.conf = filepath.Join(b.dir, "mosquitto.conf")
	return os.WriteFile(b.conf, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "root"
}

// URL is the broker address for paho: tcp://127.0.0.1:PORT (ssl:// with TLS).
func (b *Broker) URL() string {
	scheme := "tcp"
	if b.tls {
		scheme = "ssl"
	}
	return fmt.Sprintf("%s://127.0.0.1:%d", scheme, b.port)
}

// Addr is 127.0.0.1:PORT.
func (b *Broker) Addr() string { return fmt.Sprintf("127.0.0.1:%d", b.port) }

// Port is the listener port, the same across Stop and Start.
func (b *Broker) Port() int { return b.port }

// Dir is the broker's config and persistence directory.
func (b *Broker) Dir() string { return b.dir }

// Running reports whether mosquitto is currently running.
func (b *Broker) Running() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cmd != nil
}

// Start (re)starts a stopped broker on the same port and waits until it
// accepts connections; failure fails the test. No-op when running.
func (b *Broker) Start() {
	if b.t != nil {
		b.t.Helper()
	}
	if err := b.Run(); err != nil {
		if b.t == nil {
			panic(err)
		}
		b.t.Fatalf("brokertest: %v", err)
	}
}

// Run is Start returning the error. The caller stops the broker with Stop.
func (b *Broker) Run() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cmd != nil {
		return nil
	}
	// The port may linger in TIME_WAIT or a just-killed mosquitto may still
	// hold it: retry for a while.
	var lastErr error
	for attempt := 0; attempt < 20; attempt++ {
		if lastErr = b.startLocked(); lastErr == nil {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("start mosquitto on %s: %w", b.Addr(), lastErr)
}

func (b *Broker) startLocked() error {
	log := &bytes.Buffer{}
	cmd := exec.Command(Binary, "-c", b.conf)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("mosquitto exited at start: %s", log.String())
		default:
		}
		c, err := net.DialTimeout("tcp", b.Addr(), 200*time.Millisecond)
		if err == nil {
			c.Close()
			b.cmd, b.done, b.log = cmd, done, log
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-done
	return errors.New("mosquitto did not accept connections within 5s: " + log.String())
}

// Stop shuts the broker down gracefully (SIGTERM: it saves its persistence
// file, so queued QoS 1 messages survive the restart).
func (b *Broker) Stop() { b.signal(syscall.SIGTERM) }

// Kill stops the broker with SIGKILL: whatever it had not saved is gone.
func (b *Broker) Kill() { b.signal(syscall.SIGKILL) }

func (b *Broker) signal(sig syscall.Signal) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cmd == nil {
		return
	}
	_ = b.cmd.Process.Signal(sig)
	select {
	case <-b.done:
	case <-time.After(10 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.done
	}
	b.cmd = nil
}

func (b *Broker) aclPath() string { return filepath.Join(b.dir, "acl") }

// SetACL rewrites the broker's ACL file (see WithACL); Reload applies it to
// a running broker.
func (b *Broker) SetACL(lines ...string) error {
	if err := os.WriteFile(b.aclPath(), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		return fmt.Errorf("write ACL file: %w", err)
	}
	return nil
}

// Reload sends SIGHUP: mosquitto re-reads its password and ACL files
// without dropping connections.
func (b *Broker) Reload() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cmd == nil {
		return errors.New("reload: broker not running")
	}
	return b.cmd.Process.Signal(syscall.SIGHUP)
}

// Log returns what the current (or last) mosquitto process logged.
func (b *Broker) Log() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.log == nil {
		return ""
	}
	return b.log.String()
}
