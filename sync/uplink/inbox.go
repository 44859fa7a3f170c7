package uplink

import (
	"sync"
	"time"
)

// inbox is the FIFO between paho's message callback and the goroutine that
// takes commands from it. push must not wait long: paho reads PUBACKs,
// PINGRESPs and commands on one goroutine, so a callback waiting behind a
// backlog of slow commands (replies being stored, one by one) stalled the
// whole session until its own PUBLISH or keepalive timed out and the
// session dropped.
//
// Without a bound it holds whatever arrives: the broker's in-flight window
// does not bound it (mosquitto sent a reconnecting session's queue of
// 10,000 replies far beyond max_inflight_messages: 3,500 commands, 55 MB,
// were held here at once). With a bound (setBound; only where a fast
// taker, the store's command intake, empties it a batch per write), push
// waits for room, for at most maxWait: the time of one store write, so the
// session's own traffic waits that long at worst, and memory stays within
// the bound while the store keeps up. Past maxWait (a stalled store) the
// command is queued anyway, and counted, and so are the ones after it
// without waiting until the queue is below the bound again: the session
// outranks the bound.
type inbox struct {
	mu      sync.Mutex
	q       []inbound
	limit   int           // 0: no bound
	maxWait time.Duration // longest push waits for room
	over    uint64        // pushes past the bound
	stalled bool          // a push timed out: no waiting until below limit
	ready   chan struct{} // a token while q is not empty
	room    chan struct{} // a token after a pop
}

func newInbox() *inbox {
	return &inbox{ready: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

// setBound makes push wait, up to maxWait, while limit commands are queued.
func (b *inbox) setBound(limit int, maxWait time.Duration) {
	b.mu.Lock()
	b.limit, b.maxWait = limit, maxWait
	b.mu.Unlock()
}

func (b *inbox) push(in inbound) {
	b.mu.Lock()
	if b.limit > 0 && len(b.q) >= b.limit && b.stalled {
		b.over++
	} else if b.limit > 0 && len(b.q) >= b.limit {
		deadline := time.NewTimer(b.maxWait)
		for b.limit > 0 && len(b.q) >= b.limit {
			b.mu.Unlock()
			select {
			case <-b.room:
				b.mu.Lock()
				continue
			case <-deadline.C:
			}
			b.mu.Lock()
			b.over++
			b.stalled = true
			break
		}
		deadline.Stop()
	}
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
	if len(b.q) < b.limit {
		b.stalled = false
	}
	select {
	case b.room <- struct{}{}:
	default:
	}
	return in, true
}

// Len is the number of commands waiting.
func (b *inbox) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.q)
}

// overBound is the number of commands queued past the bound.
func (b *inbox) overBound() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.over
}
