package buffer

import (
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// The command inbox: commands from the backend as received (raw payloads),
// stored before they are acknowledged to the broker and carried out after,
// in arrival order. Acknowledging a command thus costs one store write
// shared by every command that arrived meanwhile (one transaction, one
// fsync), whatever carrying it out costs: a backlog of thousands waits
// here, counted in MaxBytes, not in the broker's in-flight window or in
// memory. Keys c/<n>, n from the inbox's own counter; the order is kept in
// memory (loaded once per Open) so taking the next command never iterates
// over the tombstones of the ones done.
var prefixInbox = []byte("c/")

func inboxKey(n uint64) []byte { return append([]byte("c/"), be8(n)...) }

// InboxCommand is a stored command: N orders it, Payload is as received.
type InboxCommand struct {
	N       uint64
	Payload []byte
}

type cmdInbox struct {
	loaded bool
	next   uint64   // last N handed out
	queue  []uint64 // stored, in order
}

func (s *Store) loadInboxLocked() error {
	if s.inbox.loaded {
		return nil
	}
	var x cmdInbox
	err := s.view(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixInbox})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n := seqOfKey(it.Item().Key())
			x.queue = append(x.queue, n)
			x.next = max(x.next, n)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("load command inbox: %w", err)
	}
	x.loaded = true
	s.inbox = x
	return nil
}

// AcceptCommands stores payloads, in order, in one durable write (per
// Options.Sync): once it returns nil they may be acknowledged to the
// broker. ErrFull when MaxBytes has no room for them.
func (s *Store) AcceptCommands(payloads [][]byte) error {
	if len(payloads) == 0 {
		return nil
	}
	what := fmt.Sprintf("accept %d command(s)", len(payloads))
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadInboxLocked(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	var size int64
	for _, p := range payloads {
		size += int64(len(p) + 10)
	}
	if s.opts.MaxBytes > 0 && s.acct.total()+size > s.opts.MaxBytes {
		return s.refuse("command", size, fmt.Sprintf("%d bytes stored, cap %d", s.acct.total(), s.opts.MaxBytes))
	}
	err := s.writeLocked(what, size, func(txn *badger.Txn, _ uint64) (func(), error) {
		n := s.inbox.next
		var ns []uint64
		var bytes int64
		for _, p := range payloads {
			n++
			k := inboxKey(n)
			if err := txn.Set(k, p); err != nil {
				return nil, err
			}
			ns = append(ns, n)
			bytes += int64(len(k) + len(p))
		}
		return func() {
			s.inbox.next = n
			s.inbox.queue = append(s.inbox.queue, ns...)
			s.acct.add(areaInbox, len(ns), bytes)
		}, nil
	})
	if err != nil {
		return err
	}
	s.signalInbox()
	return nil
}

// InboxCommands returns up to limit stored commands, oldest first.
func (s *Store) InboxCommands(limit int) ([]InboxCommand, error) {
	s.mu.Lock()
	err := s.loadInboxLocked()
	ns := s.inbox.queue
	if limit > 0 && len(ns) > limit {
		ns = ns[:limit]
	}
	ns = append([]uint64(nil), ns...)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	out := make([]InboxCommand, 0, len(ns))
	err = s.view(func(txn *badger.Txn) error {
		for _, n := range ns {
			item, err := txn.Get(inboxKey(n))
			if err != nil {
				return fmt.Errorf("inbox command %d: %w", n, err)
			}
			p, err := item.ValueCopy(nil)
			if err != nil {
				return fmt.Errorf("inbox command %d: %w", n, err)
			}
			out = append(out, InboxCommand{N: n, Payload: p})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read command inbox: %w", err)
	}
	return out, nil
}

// DoneCommand deletes a command that was carried out (its own effects,
// such as a stored reply, are durable already).
func (s *Store) DoneCommand(n uint64) error {
	what := fmt.Sprintf("delete inbox command %d", n)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadInboxLocked(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return s.writeLocked(what, -1, func(txn *badger.Txn, _ uint64) (func(), error) {
		k := inboxKey(n)
		item, err := txn.Get(k)
		if err == badger.ErrKeyNotFound {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		size := int64(len(k)) + item.ValueSize()
		if err := txn.Delete(k); err != nil {
			return nil, err
		}
		return func() {
			s.acct.add(areaInbox, -1, -size)
			for i, m := range s.inbox.queue {
				if m == n {
					s.inbox.queue = append(s.inbox.queue[:i], s.inbox.queue[i+1:]...)
					break
				}
			}
		}, nil
	})
}

// InboxCount is the number of commands waiting to be carried out.
func (s *Store) InboxCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acct.n(areaInbox)
}

// InboxNotify is signalled after commands were accepted.
func (s *Store) InboxNotify() <-chan struct{} { return s.inboxNotify }

func (s *Store) signalInbox() {
	select {
	case s.inboxNotify <- struct{}{}:
	default:
	}
}
