package buffer

import (
	"encoding/json"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// The reply index: besides r/<seq> (the reply) and ri/<id> (de-duplication),
// every reply has exactly one of ro/<seq> (open) or rf/<seq> (finished),
// valued with its id. Storing a reply therefore never reads the others:
// the counts come from the accounting (areaReplyOpen, areaReplyDone), the
// oldest finished reply to evict and the oldest open reply to drop are the
// first keys of their prefix, and the player lists the open replies
// without decoding the finished ones.
var (
	prefixReplyOpen = []byte("ro/")
	prefixReplyDone = []byte("rf/")
)

func replyStateKey(open bool, seq uint64) []byte {
	if open {
		return append([]byte("ro/"), be8(seq)...)
	}
	return append([]byte("rf/"), be8(seq)...)
}

func replyArea(open bool) area {
	if open {
		return areaReplyOpen
	}
	return areaReplyDone
}

// putReply writes r under its keys. old is the stored version (nil for a
// new reply) with the size of its stored value; d collects the accounting
// delta to apply once the transaction committed.
func putReply(txn *badger.Txn, r Reply, old *Reply, oldSize int64, d *accounting) error {
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	k := replyKey(r.Seq)
	if err := txn.Set(k, v); err != nil {
		return err
	}
	open := r.State.Open()
	if old == nil {
		d.add(areaReply, 1, int64(len(k)+len(v)))
		ik := replyIndexKey(r.ID)
		if err := txn.Set(ik, k); err != nil {
			return err
		}
		d.add(areaReplyID, 0, int64(len(ik)+len(k)))
	} else {
		d.add(areaReply, 0, int64(len(v))-oldSize)
		if old.State.Open() == open {
			return nil
		}
		ok := replyStateKey(!open, r.Seq)
		if err := txn.Delete(ok); err != nil {
			return err
		}
		d.add(replyArea(!open), -1, -int64(len(ok)+len(r.ID)))
	}
	sk := replyStateKey(open, r.Seq)
	if err := txn.Set(sk, []byte(r.ID)); err != nil {
		return err
	}
	d.add(replyArea(open), 1, int64(len(sk)+len(r.ID)))
	return nil
}

// deleteReply removes the reply stored at seq under id, with its index keys.
func deleteReply(txn *badger.Txn, seq uint64, id string, open bool, d *accounting) error {
	k := replyKey(seq)
	item, err := txn.Get(k)
	if err != nil {
		return fmt.Errorf("reply %q at %x: %w", id, k, err)
	}
	size := int64(len(k)) + item.ValueSize()
	ik, sk := replyIndexKey(id), replyStateKey(open, seq)
	for _, key := range [][]byte{k, ik, sk} {
		if err := txn.Delete(key); err != nil {
			return err
		}
	}
	d.add(areaReply, -1, -size)
	d.add(areaReplyID, 0, -int64(len(ik)+len(k)))
	d.add(replyArea(open), -1, -int64(len(sk)+len(id)))
	return nil
}

// firstIndexed calls fn with the seq and id of each reply in the open or
// finished index, oldest first, until fn returns false.
func firstIndexed(txn *badger.Txn, open bool, fn func(seq uint64, id string) bool) error {
	prefix := prefixReplyDone
	if open {
		prefix = prefixReplyOpen
	}
	it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false, Prefix: prefix})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		var id string
		if err := it.Item().Value(func(v []byte) error { id = string(v); return nil }); err != nil {
			return err
		}
		if !fn(seqOfKey(it.Item().Key()), id) {
			return nil
		}
	}
	return nil
}

// ensureReplyIndexLocked builds the open/finished index of a store written
// before it existed (or whose index does not add up): once per Open, then
// every reply write keeps it. Called with s.mu held.
func (s *Store) ensureReplyIndexLocked() error {
	if s.replyIndexed {
		return nil
	}
	a := s.acct
	if a.count[areaReply] == a.count[areaReplyOpen]+a.count[areaReplyDone] {
		s.replyIndexed = true
		return nil
	}
	var n int
	err := s.writeLocked("index stored replies", -1, func(txn *badger.Txn, _ uint64) (func(), error) {
		var d accounting
		for _, prefix := range [][]byte{prefixReplyOpen, prefixReplyDone} {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
			var stale [][]byte
			for it.Rewind(); it.Valid(); it.Next() {
				stale = append(stale, it.Item().KeyCopy(nil))
				ar, _ := areaOf(it.Item().Key())
				d.add(ar, -1, -(int64(len(it.Item().Key())) + it.Item().ValueSize()))
			}
			it.Close()
			for _, k := range stale {
				if err := txn.Delete(k); err != nil {
					return nil, err
				}
			}
		}
		var serr error
		err := iterReplies(txn, func(_ []byte, r Reply) bool {
			sk := replyStateKey(r.State.Open(), r.Seq)
			if serr = txn.Set(sk, []byte(r.ID)); serr != nil {
				return false
			}
			d.add(replyArea(r.State.Open()), 1, int64(len(sk)+len(r.ID)))
			n++
			return true
		})
		if err == nil {
			err = serr
		}
		if err != nil {
			return nil, err
		}
		return func() { s.acct.merge(d) }, nil
	})
	if err != nil {
		return err
	}
	s.log.Info("indexed stored replies", "replies", n)
	s.replyIndexed = true
	return nil
}

// ReplyCounts returns the replies stored open (queued, held, speaking) and
// finished, from the accounting: no reply is read.
func (s *Store) ReplyCounts() (open, finished int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acct.n(areaReplyOpen), s.acct.n(areaReplyDone)
}

// OpenReplies returns up to limit open replies (all when limit <= 0) in
// arrival order, read through the index: finished replies are not read.
func (s *Store) OpenReplies(limit int) ([]Reply, error) {
	s.mu.Lock()
	err := s.ensureReplyIndexLocked()
	s.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("list open replies: %w", err)
	}
	var out []Reply
	err = s.view(func(txn *badger.Txn) error {
		var ferr error
		err := firstIndexed(txn, true, func(seq uint64, id string) bool {
			item, err := txn.Get(replyKey(seq))
			if err != nil {
				ferr = fmt.Errorf("open reply %q: %w", id, err)
				return false
			}
			var r Reply
			if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &r) }); err != nil {
				ferr = fmt.Errorf("decode reply %q: %w", id, err)
				return false
			}
			out = append(out, r)
			return limit <= 0 || len(out) < limit
		})
		if err != nil {
			return err
		}
		return ferr
	})
	if err != nil {
		return nil, fmt.Errorf("list open replies: %w", err)
	}
	return out, nil
}
