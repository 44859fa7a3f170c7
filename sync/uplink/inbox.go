package uplink

import "sync"

// inbox is the FIFO between paho's message callback and serveCommands.
// push never blocks: paho reads PUBACKs, PINGRESPs and commands on one
// goroutine, so a callback waiting for room would stall the whole session
// behind a backlog of slow commands (replies being stored), until its own
// PUBLISH or keepalive timed out and the session dropped. The queue needs
// no bound of its own: a command is acknowledged to the broker only once
// handled, so the broker's in-flight window (mosquitto
// max_inflight_messages, 20 by default; NATS max_ack_pending) bounds what
// can be waiting here, each at most protocol.MaxCommandBytes.
type inbox struct {
	mu    sync.Mutex
	q     []inbound
	ready chan struct{} // a token while q is not empty
}

func newInbox() *inbox { return &inbox{ready: make(chan struct{}, 1)} }

func (b *inbox) push(in inbound) {
	b.mu.Lock()
	b.q = append(b.q, in)
	b.mu.Unlock()
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

// pop takes the oldest command; false when there is none.
func (b *inbox) pop() (inbound, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.q) == 0 {
		return inbound{}, false
	}
	in := b.q[0]
	b.q[0] = inbound{}
	b.q = b.q[1:]
	if len(b.q) == 0 {
		b.q = nil // let the backing array go after a burst
	}
	return in, true
}

// Len is the number of commands waiting.
func (b *inbox) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.q)
}
