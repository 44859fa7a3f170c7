package buffer

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/dgraph-io/badger/v4"
)

// The reply index: besides r/<seq> (the reply) and ri/<id> (de-duplication),
// every reply has exactly one of ro/<seq> (open) or rf/<seq> (finished),
// valued with its id. They are read once per Open into replyIdx, two
// seq-ordered lists (at most MaxReplies entries each) kept by every reply
// write after it commits. Storing a reply therefore never reads the others
// nor iterates over the key space (where a flood's deleted replies would
// leave tombstones to skip): the oldest finished reply to evict and the
// oldest open one to drop are the heads of the lists, and the player reads
// the open replies by key.
var (
	prefixReplyOpen = []byte("ro/")
	prefixReplyDone = []byte("rf/")
)

type replyRef struct {
	seq uint64
	id  string
}

// replyIdx is the in-memory index, guarded by Store.mu.
type replyIdx struct {
	loaded     bool
	open, done []replyRef // ascending seq
}

func (x *replyIdx) list(open bool) *[]replyRef {
	if open {
		return &x.open
	}
	return &x.done
}

func (x *replyIdx) insert(open bool, ref replyRef) {
	l := x.list(open)
	i, _ := slices.BinarySearchFunc(*l, ref.seq, func(r replyRef, seq uint64) int { return cmpSeq(r.seq, seq) })
	*l = slices.Insert(*l, i, ref)
}

func (x *replyIdx) remove(open bool, seq uint64) {
	l := x.list(open)
	if i, ok := slices.BinarySearchFunc(*l, seq, func(r replyRef, seq uint64) int { return cmpSeq(r.seq, seq) }); ok {
		*l = slices.Delete(*l, i, i+1)
	}
}

func cmpSeq(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// replyTx collects what a reply transaction changes, applied to the
// accounting and the in-memory index once it committed.
type replyTx struct {
	acct accounting
	ops  []func(*replyIdx)
}

func (t *replyTx) apply(s *Store) {
	s.acct.merge(t.acct)
	for _, op := range t.ops {
		op(&s.ridx)
	}
}

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
// new reply) with the size of its stored value.
func putReply(txn *badger.Txn, r Reply, old *Reply, oldSize int64, t *replyTx) error {
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
		t.acct.add(areaReply, 1, int64(len(k)+len(v)))
		ik := replyIndexKey(r.ID)
		if err := txn.Set(ik, k); err != nil {
			return err
		}
		t.acct.add(areaReplyID, 0, int64(len(ik)+len(k)))
	} else {
		t.acct.add(areaReply, 0, int64(len(v))-oldSize)
		if old.State.Open() == open {
			return nil
		}
		ok := replyStateKey(!open, r.Seq)
		if err := txn.Delete(ok); err != nil {
			return err
		}
		t.acct.add(replyArea(!open), -1, -int64(len(ok)+len(r.ID)))
		t.ops = append(t.ops, func(x *replyIdx) { x.remove(!open, r.Seq) })
	}
	sk := replyStateKey(open, r.Seq)
	if err := txn.Set(sk, []byte(r.ID)); err != nil {
		return err
	}
	t.acct.add(replyArea(open), 1, int64(len(sk)+len(r.ID)))
	ref := replyRef{r.Seq, r.ID}
	t.ops = append(t.ops, func(x *replyIdx) { x.insert(open, ref) })
	return nil
}

// deleteReply removes the reply stored at seq under id, with its index keys.
func deleteReply(txn *badger.Txn, ref replyRef, open bool, t *replyTx) error {
	k := replyKey(ref.seq)
	item, err := txn.Get(k)
	if err != nil {
		return fmt.Errorf("reply %q at %x: %w", ref.id, k, err)
	}
	size := int64(len(k)) + item.ValueSize()
	ik, sk := replyIndexKey(ref.id), replyStateKey(open, ref.seq)
	for _, key := range [][]byte{k, ik, sk} {
		if err := txn.Delete(key); err != nil {
			return err
		}
	}
	t.acct.add(areaReply, -1, -size)
	t.acct.add(areaReplyID, 0, -int64(len(ik)+len(k)))
	t.acct.add(replyArea(open), -1, -int64(len(sk)+len(ref.id)))
	t.ops = append(t.ops, func(x *replyIdx) { x.remove(open, ref.seq) })
	return nil
}

// ensureReplyIndexLocked loads the index, first building its keys for a
// store written before they existed (or whose keys do not add up). Once
// per Open; then every reply write keeps it. Called with s.mu held.
func (s *Store) ensureReplyIndexLocked() error {
	if s.ridx.loaded {
		return nil
	}
	a := s.acct
	if a.count[areaReply] != a.count[areaReplyOpen]+a.count[areaReplyDone] {
		if err := s.rebuildReplyIndexLocked(); err != nil {
			return err
		}
	}
	var x replyIdx
	err := s.view(func(txn *badger.Txn) error {
		for _, open := range []bool{true, false} {
			prefix := prefixReplyDone
			if open {
				prefix = prefixReplyOpen
			}
			it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false, Prefix: prefix})
			for it.Rewind(); it.Valid(); it.Next() {
				var id string
				if err := it.Item().Value(func(v []byte) error { id = string(v); return nil }); err != nil {
					it.Close()
					return err
				}
				l := x.list(open)
				*l = append(*l, replyRef{seqOfKey(it.Item().Key()), id}) // keys iterate in seq order
			}
			it.Close()
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("load reply index: %w", err)
	}
	x.loaded = true
	s.ridx = x
	return nil
}

func (s *Store) rebuildReplyIndexLocked() error {
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
// arrival order, read by key through the index: finished replies are
// neither read nor skipped over.
func (s *Store) OpenReplies(limit int) ([]Reply, error) {
	s.mu.Lock()
	err := s.ensureReplyIndexLocked()
	refs := s.ridx.open
	if limit > 0 && len(refs) > limit {
		refs = refs[:limit]
	}
	refs = slices.Clone(refs)
	s.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("list open replies: %w", err)
	}
	out := make([]Reply, 0, len(refs))
	err = s.view(func(txn *badger.Txn) error {
		for _, ref := range refs {
			item, err := txn.Get(replyKey(ref.seq))
			if err == badger.ErrKeyNotFound {
				continue // finished and evicted since the index was read
			}
			if err != nil {
				return fmt.Errorf("open reply %q: %w", ref.id, err)
			}
			var r Reply
			if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &r) }); err != nil {
				return fmt.Errorf("decode reply %q: %w", ref.id, err)
			}
			if r.State.Open() {
				out = append(out, r)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list open replies: %w", err)
	}
	return out, nil
}
