package brokertest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy is a TCP forwarder whose connections can be cut abruptly (no MQTT
// DISCONNECT), as when a device loses power or radio.
type Proxy struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

// NewProxy forwards a loopback port to target until the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{l: l, target: target}
	t.Cleanup(func() { l.Close(); p.Cut() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if p.closed {
				p.mu.Unlock()
				c.Close()
				continue
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				p.mu.Unlock()
				c.Close()
				continue
			}
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	return p
}

// URL is the proxy's broker URL.
func (p *Proxy) URL() string { return "tcp://" + p.l.Addr().String() }

// Cut closes every connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Restore accepts connections again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.closed = false
	p.mu.Unlock()
}
