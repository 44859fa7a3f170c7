package buffer

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// ReplyState is where a reply from the backend stands on the device.
type ReplyState string

// Reply states. Queued, Held and Speaking are open; the others are final.
const (
	ReplyQueued      ReplyState = "queued"   // stored, waiting for its turn
	ReplyHeld        ReplyState = "held"     // listen mode: waiting for feedback mode or a request
	ReplySpeaking    ReplyState = "speaking" // playback started (a crash here ends it as interrupted)
	ReplySpoken      ReplyState = "spoken"
	ReplyInterrupted ReplyState = "interrupted"
	ReplyExpired     ReplyState = "expired"
	ReplyFailed      ReplyState = "failed"
	ReplyDropped     ReplyState = "dropped" // never spoken: too many replies waiting (MaxReplies)
)

// Open reports whether the reply may still be spoken automatically.
func (s ReplyState) Open() bool { return s == ReplyQueued || s == ReplyHeld || s == ReplySpeaking }

// MaxReplies bounds the replies kept: past it the oldest finished ones are
// deleted when a new one arrives. Open replies are never deleted; the store
// refuses (ErrFull) a new reply while MaxReplies are open, so their owner
// must finish one first (the player drops the oldest held reply). Replies
// count in Options.MaxBytes like everything else stored: finished ones are
// evicted to make room, open ones never.
const MaxReplies = 500

// Reply is a reply command as stored on the device. The store keys it by ID
// (the de-duplication key) and orders it by Seq (arrival).
type Reply struct {
	ID         string     `json:"id"`
	Seq        uint64     `json:"seq"` // arrival order, from the device's sequence counter
	InReplyTo  string     `json:"in_reply_to,omitempty"`
	Text       string     `json:"text"`
	Spoken     string     `json:"spoken,omitempty"`
	Lang       string     `json:"lang,omitempty"`
	Urgent     bool       `json:"urgent,omitempty"`
	ExpiresAt  time.Time  `json:"expires_at"`
	ReceivedAt time.Time  `json:"received_at"`
	State      ReplyState `json:"state"`
	Reason     string     `json:"reason,omitempty"` // why it failed
	Plays      int        `json:"plays,omitempty"`  // playbacks started (replays included)
	UpdatedAt  time.Time  `json:"updated_at"`
}

var (
	prefixReply      = []byte("r/")
	prefixReplyIndex = []byte("ri/")
)

func replyKey(seq uint64) []byte     { return append([]byte("r/"), be8(seq)...) }
func replyIndexKey(id string) []byte { return append([]byte("ri/"), id...) }

// ErrNoReply is returned (wrapped) for an unknown reply id.
var ErrNoReply = errors.New("no such reply")

// AddReply stores a reply that arrived from the backend, unless one with the
// same ID is already stored: then it returns the stored one and false, so a
// redelivered reply is never queued twice. Seq, ReceivedAt, UpdatedAt and
// (when empty) State are assigned. The write is durable (per Options.Sync)
// before AddReply returns, so the command may be acknowledged to the broker.
// Its cost does not depend on the replies stored: the caps are applied
// from the accounting and the index (replyindex.go), never by reading them.
func (s *Store) AddReply(r Reply) (Reply, bool, error) {
	if r.ID == "" {
		return Reply{}, false, errors.New("add reply: empty id")
	}
	what := "add reply " + r.ID
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ensureReplyIndexLocked(); err != nil {
		return Reply{}, false, fmt.Errorf("%s: %w", what, err)
	}
	var stored Reply
	found := false
	now := time.Now().UTC()
	r.ReceivedAt, r.UpdatedAt = now, now
	if r.State == "" {
		r.State = ReplyQueued
	}
	size := int64(len(r.Text)+len(r.Spoken)+len(r.ID)+len(r.InReplyTo)) + 512 // JSON, keys and index
	// Looked up in the write transaction itself: no second writer can
	// store the same id in between (writers are serialised by s.mu).
	err := s.writeLocked(what, size, func(txn *badger.Txn, next uint64) (func(), error) {
		var err error
		if stored, err = getReply(txn, r.ID); err == nil {
			found = true
			return nil, nil
		} else if !errors.Is(err, ErrNoReply) {
			return nil, err
		}
		open, done := s.acct.n(areaReplyOpen), s.acct.n(areaReplyDone)
		if r.State.Open() && open >= MaxReplies {
			return nil, s.refuse("reply", size, fmt.Sprintf("%d replies open, cap %d", open, MaxReplies))
		}
		// Evict the oldest finished replies: beyond MaxReplies, and while
		// the new one would not fit in MaxBytes.
		var t replyTx
		extra := open + done + 1 - MaxReplies
		over := func() bool {
			return s.opts.MaxBytes > 0 && s.acct.total()+t.acct.total()+size > s.opts.MaxBytes
		}
		for _, ref := range s.ridx.done {
			if extra <= 0 && !over() {
				break
			}
			if err := deleteReply(txn, ref, false, &t); err != nil {
				return nil, err
			}
			extra--
		}
		if over() {
			return nil, s.refuse("reply", size, fmt.Sprintf("%d bytes stored, cap %d", s.acct.total()+t.acct.total(), s.opts.MaxBytes))
		}
		r.Seq = next
		if err := putReply(txn, r, nil, 0, &t); err != nil {
			return nil, err
		}
		if err := txn.Set(keySeq, be8(next)); err != nil {
			return nil, err
		}
		return func() { s.seq = next; t.apply(s) }, nil
	})
	if found {
		return stored, false, nil
	}
	if err != nil {
		return Reply{}, false, err
	}
	return r, true, nil
}

// UpdateReply sets a stored reply's state (reason: why it failed) and, when
// ack is not nil, queues ack as a KindAck entry on the control lane in the
// same transaction: the backend hears of an outcome exactly when the store
// has it. Speaking counts a playback in Plays.
func (s *Store) UpdateReply(id string, state ReplyState, reason string, ack []byte, offline bool) (Reply, error) {
	what := fmt.Sprintf("update reply %s to %s", id, state)
	s.mu.Lock()
	defer s.mu.Unlock()
	var r Reply
	if err := s.ensureReplyIndexLocked(); err != nil {
		return Reply{}, fmt.Errorf("%s: %w", what, err)
	}
	update := func(txn *badger.Txn) (func(), error) {
		old, oldSize, err := getReplySized(txn, id)
		if err != nil {
			return nil, err
		}
		r = old
		r.State, r.Reason, r.UpdatedAt = state, reason, time.Now().UTC()
		if state == ReplySpeaking {
			r.Plays++
		}
		var t replyTx
		if err := putReply(txn, r, &old, oldSize, &t); err != nil {
			return nil, err
		}
		return func() { t.apply(s) }, nil
	}
	if ack == nil {
		err := s.writeLocked(what, 256, func(txn *badger.Txn, _ uint64) (func(), error) { return update(txn) })
		return r, err
	}
	if !json.Valid(ack) {
		return Reply{}, fmt.Errorf("%s: ack body is not valid JSON", what)
	}
	eid, err := newID()
	if err != nil {
		return Reply{}, fmt.Errorf("%s: %w", what, err)
	}
	e := Entry{ID: eid, Seq: s.seq + 1, Lane: LaneControl, Kind: KindAck, CreatedAt: time.Now().UTC(), Offline: offline, Body: append([]byte(nil), ack...)}
	if err := s.enqueueLocked(what, string(KindAck), e, update); err != nil {
		return Reply{}, err
	}
	return r, nil
}

// GetReply returns the stored reply with id (ErrNoReply when there is none).
func (s *Store) GetReply(id string) (Reply, error) {
	var r Reply
	err := s.view(func(txn *badger.Txn) error {
		var err error
		r, err = getReply(txn, id)
		return err
	})
	if err != nil {
		return Reply{}, fmt.Errorf("read reply %s: %w", id, err)
	}
	return r, nil
}

// ListReplies returns the last limit replies (all when limit <= 0) in
// arrival order; open is true to list only the open ones.
func (s *Store) ListReplies(limit int, open bool) ([]Reply, error) {
	var out []Reply
	err := s.view(func(txn *badger.Txn) error {
		return iterReplies(txn, func(_ []byte, r Reply) bool {
			if !open || r.State.Open() {
				out = append(out, r)
			}
			return true
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list replies: %w", err)
	}
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}

func getReply(txn *badger.Txn, id string) (Reply, error) {
	r, _, err := getReplySized(txn, id)
	return r, err
}

// getReplySized also returns the size of the stored value (accounting).
func getReplySized(txn *badger.Txn, id string) (Reply, int64, error) {
	item, err := txn.Get(replyIndexKey(id))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return Reply{}, 0, fmt.Errorf("%q: %w", id, ErrNoReply)
	}
	if err != nil {
		return Reply{}, 0, err
	}
	k, err := item.ValueCopy(nil)
	if err != nil {
		return Reply{}, 0, err
	}
	if item, err = txn.Get(k); err != nil {
		return Reply{}, 0, fmt.Errorf("reply %q index points at %x: %w", id, k, err)
	}
	var r Reply
	if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &r) }); err != nil {
		return Reply{}, 0, fmt.Errorf("decode reply %q: %w", id, err)
	}
	return r, item.ValueSize(), nil
}

func iterReplies(txn *badger.Txn, fn func(k []byte, r Reply) bool) error {
	it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, PrefetchSize: 16, Prefix: prefixReply})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		var r Reply
		if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &r) }); err != nil {
			return fmt.Errorf("reply key %x: %w", it.Item().Key(), err)
		}
		if !fn(it.Item().KeyCopy(nil), r) {
			return nil
		}
	}
	return nil
}
