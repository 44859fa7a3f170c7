package bridge

import (
	"context"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// worker is one device's: its in-memory queue (unacknowledged to the
// broker) and its backlog in the Spill (acknowledged), numbered head..tail-1.
// All fields but ch are guarded by MQTT.mu.
//
// Order: while the backlog is not empty every new message goes to its end.
// When it starts, what is still in memory goes first: the queue is moved to
// it, and the message the worker is handling (cur) is copied before its
// head, so that after a crash the backlog, not the broker's redelivery,
// holds the oldest message (the redelivered copy is then a duplicate).
type worker struct {
	ch         chan paho.Message
	head, tail uint64
	bytes      int64
	cur        paho.Message // being handled, from ch
	curSpilled bool         // cur is also the backlog's head
}

// spillBase numbers a new worker's backlog, leaving room to put messages
// before its head.
const spillBase = 1 << 40

// Workers reports the device workers running now.
func (m *MQTT) Workers() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.workers)
}

// startWorker starts device's worker; m.mu is held.
func (m *MQTT) startWorker(device string) *worker {
	w := &worker{ch: make(chan paho.Message, m.o.QueuePerDevice), head: spillBase, tail: spillBase}
	m.workers[device] = w
	m.wg.Add(1)
	go m.work(device, w)
	if m.seen != nil {
		m.seen(len(m.workers))
	}
	return w
}

// onMessage runs on paho's single delivery goroutine: it only queues (in
// memory, or in the device's backlog), and waits only when a device is
// over its backlog bound (or there is no Spill).
func (m *MQTT) onMessage(_ paho.Client, msg paho.Message) {
	device := DeviceOf(msg.Topic())
	if device == "" {
		// Not a device topic: Handle counts and logs it; nothing to order.
		_ = m.handle(m.ctx, msg.Topic(), msg.Payload())
		msg.Ack()
		return
	}
	m.mu.Lock()
	w := m.workers[device]
	if w == nil {
		w = m.startWorker(device)
	}
	if w.tail == w.head && len(w.ch) < cap(w.ch) {
		w.ch <- msg // cannot block: only this goroutine sends
		m.mu.Unlock()
		return
	}
	if m.o.Spill == nil {
		m.mu.Unlock()
		select { // no backlog: hold the broker back until the worker takes it
		case w.ch <- msg:
		case <-m.ctx.Done():
		}
		return
	}
	// Into the backlog; over its bounds (or on a storage error) the broker
	// is held back until there is room, so the order stays.
	for {
		if w.tail-w.head < uint64(m.o.MaxBacklog) && w.bytes < m.o.MaxBacklogBytes {
			err := m.startBacklog(device, w)
			if err == nil {
				err = m.spill(device, w, msg)
			}
			if err == nil {
				m.mu.Unlock()
				return
			}
			m.log.Error("keeping a backlog message failed; retrying", "device", device, "err", err)
		}
		m.mu.Unlock()
		select {
		case <-m.ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
		m.mu.Lock()
		if m.workers[device] != w { // it ended meanwhile (idle, empty)
			if w = m.workers[device]; w == nil {
				w = m.startWorker(device)
			}
		}
	}
}

// spill appends msg to w's backlog and acknowledges it; m.mu is held.
func (m *MQTT) spill(device string, w *worker, msg paho.Message) error {
	if err := m.o.Spill.SpillPut(device, w.tail, msg.Topic(), msg.Payload()); err != nil {
		return err
	}
	w.tail++
	w.bytes += int64(len(msg.Payload()))
	msg.Ack() // kept in the bridge's state now
	return nil
}

// startBacklog moves what w holds in memory into its empty backlog, oldest
// first (see worker); m.mu is held.
func (m *MQTT) startBacklog(device string, w *worker) error {
	if w.tail != w.head {
		return nil
	}
	if err := m.spillCur(device, w); err != nil {
		return err
	}
	for len(w.ch) > 0 {
		if err := m.spill(device, w, <-w.ch); err != nil {
			return err
		}
	}
	return nil
}

// spillCur copies the message the worker is handling before the head of
// its backlog; m.mu is held.
func (m *MQTT) spillCur(device string, w *worker) error {
	if w.cur == nil || w.curSpilled {
		return nil
	}
	if err := m.o.Spill.SpillPut(device, w.head-1, w.cur.Topic(), w.cur.Payload()); err != nil {
		return err
	}
	w.head--
	w.bytes += int64(len(w.cur.Payload()))
	w.curSpilled = true
	return nil
}

// work handles one device's messages in arrival order (its queue, then its
// backlog) and ends after WorkerIdle with nothing to do. A message whose
// Handle fails is retried (with backoff) before the next one is looked at;
// at shutdown it is left unacknowledged (or in the backlog) for later.
func (m *MQTT) work(device string, w *worker) {
	defer m.wg.Done()
	idle := time.NewTimer(m.o.WorkerIdle)
	defer idle.Stop()
	for {
		select {
		case msg := <-w.ch:
			if !m.handleQueued(device, w, msg) {
				return
			}
			continue
		default:
		}
		m.mu.Lock()
		n, backlog := w.head, w.tail > w.head
		m.mu.Unlock()
		if backlog {
			topic, payload, err := m.o.Spill.SpillGet(device, n)
			if err != nil {
				m.log.Error("backlog message unreadable; skipped", "device", device, "n", n, "err", err)
			} else if !m.deliver(device, topic, payload) {
				return
			}
			m.dropHead(device, w, n, len(payload))
			continue
		}
		if !idle.Stop() {
			select {
			case <-idle.C:
			default:
			}
		}
		idle.Reset(m.o.WorkerIdle)
		select {
		case <-m.ctx.Done():
			return
		case msg := <-w.ch:
			if !m.handleQueued(device, w, msg) {
				return
			}
		case <-idle.C:
			m.mu.Lock()
			if len(w.ch) == 0 && w.head == w.tail {
				delete(m.workers, device)
				if m.seen != nil {
					m.seen(len(m.workers))
				}
				m.mu.Unlock()
				return
			}
			m.mu.Unlock()
		}
	}
}

// handleQueued hands over a message from the in-memory queue and
// acknowledges it; false at shutdown.
func (m *MQTT) handleQueued(device string, w *worker, msg paho.Message) bool {
	m.mu.Lock()
	w.cur, w.curSpilled = msg, false
	if w.tail > w.head && m.o.Spill != nil {
		// A backlog started between the receive and the lock: this one
		// is older than all of it.
		if err := m.spillCur(device, w); err != nil {
			m.log.Error("keeping the message in hand before the backlog", "device", device, "err", err)
		}
	}
	m.mu.Unlock()
	ok := m.deliver(device, msg.Topic(), msg.Payload())
	m.mu.Lock()
	spilled, n := w.curSpilled, w.head
	w.cur, w.curSpilled = nil, false
	m.mu.Unlock()
	if !ok {
		return false
	}
	msg.Ack()
	if spilled { // its copy heads the backlog
		m.dropHead(device, w, n, len(msg.Payload()))
	}
	return true
}

// dropHead removes backlog entry n (the head), handed over.
func (m *MQTT) dropHead(device string, w *worker, n uint64, size int) {
	if err := m.o.Spill.SpillDelete(device, n); err != nil {
		m.log.Error("dropping a handled backlog message", "device", device, "n", n, "err", err)
	}
	m.mu.Lock()
	w.head++
	w.bytes -= int64(size)
	if w.head == w.tail {
		w.bytes = 0
	}
	m.mu.Unlock()
}

// deliver hands one message to handle until it succeeds; false at
// shutdown (the message stays for redelivery).
func (m *MQTT) deliver(device, topic string, payload []byte) bool {
	return retryHandle(m.ctx, m.log, func(ctx context.Context) error { return m.handle(ctx, topic, payload) },
		"device", device, "topic", topic)
}
