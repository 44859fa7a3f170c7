package bridge

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/nats-io/nats.go"
)

// KVStore is the Store shared by the bridges of a fleet: a JetStream
// key-value bucket. Device ids are hex-encoded into keys (KV keys allow
// fewer characters than device ids). A commit is three puts, the
// de-duplication record last: a crash between them can at worst run the
// message again, never skip it. Statuses live under their own key so that
// bridges updating a device's status never overwrite its sequence record.
type KVStore struct {
	kv  nats.KeyValue
	log *slog.Logger // what the store cleans up but cannot fail for
}

// ErrUnstorable marks a store error caused by the message itself (a key the
// store cannot hold): Bridge parks the message instead of retrying it.
var ErrUnstorable = errors.New("key the store cannot hold")

// unstorable wraps a KV error caused by the key as ErrUnstorable.
func unstorable(err error) error {
	if errors.Is(err, nats.ErrInvalidKey) {
		return fmt.Errorf("%w: %w", ErrUnstorable, err)
	}
	return err
}

func kvDev(device string) string { return hex.EncodeToString([]byte(device)) }

func (s *KVStore) get(key string, v any) (bool, error) {
	e, err := s.kv.Get(key)
	if errors.Is(err, nats.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, unstorable(err)
	}
	return true, json.Unmarshal(e.Value(), v)
}

func (s *KVStore) put(key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = s.kv.Put(key, b)
	return unstorable(err)
}

// Get implements Store.
func (s *KVStore) Get(device, id string) (Record, bool, error) {
	var r Record
	found, err := s.get("m."+kvDev(device)+"."+id, &r)
	if err != nil {
		return Record{}, false, fmt.Errorf("read record %s/%s: %w", device, id, err)
	}
	return r, found, nil
}

type kvStatus struct {
	Mode     string `json:"mode"`
	Online   bool   `json:"online"`
	StatusAt string `json:"status_at"`
	StoreID  string `json:"store_id,omitempty"`
	Outbox   int    `json:"outbox,omitempty"`
}

// Device implements Store.
func (s *KVStore) Device(device string) (DeviceState, error) {
	var ds DeviceState
	if _, err := s.get("d."+kvDev(device), &ds); err != nil {
		return ds, fmt.Errorf("read device %s: %w", device, err)
	}
	var st kvStatus
	if _, err := s.get("s."+kvDev(device), &st); err != nil {
		return ds, fmt.Errorf("read device %s status: %w", device, err)
	}
	ds.Mode, ds.Online, ds.StatusAt = st.Mode, st.Online, st.StatusAt
	ds.StatusStoreID, ds.StatusOutbox = st.StoreID, st.Outbox
	return ds, nil
}

// Commit implements Store.
func (s *KVStore) Commit(device, id string, rec Record, ds DeviceState, dl *DeadLetter) error {
	if dl != nil {
		if err := s.putDeadLetter(device, id, dl); err != nil {
			return fmt.Errorf("store dead letter %s/%s: %w", device, id, err)
		}
	}
	if rec.StoreID != "" {
		if err := s.put(kvSeq(device, rec.StoreID, rec.Seq), id); err != nil {
			return fmt.Errorf("store seq index %s/%s: %w", device, id, err)
		}
	}
	ds.Mode, ds.Online, ds.StatusAt, ds.StatusStoreID, ds.StatusOutbox = "", false, "", "", 0
	if err := s.put("d."+kvDev(device), ds); err != nil {
		return fmt.Errorf("store device %s: %w", device, err)
	}
	if err := s.put("m."+kvDev(device)+"."+id, rec); err != nil {
		return fmt.Errorf("store record %s/%s: %w", device, id, err)
	}
	// The parts are no longer needed; left behind by a crash they are
	// only space (a redelivered part finds the record first).
	keys, err := s.partKeys(device, id)
	if err != nil {
		s.log.Warn("listing a committed message's batch parts to drop them; they stay as unused space",
			"device", device, "id", id, "err", err)
		return nil
	}
	if len(keys) > 0 {
		for _, k := range keys {
			if err := s.kv.Purge(k); err != nil {
				s.log.Warn("dropping a part of a committed batch; it stays as unused space", "device", device, "id", id,
					"key", k, "err", err)
			}
		}
		if err := s.kv.Purge(kvPending(device, id)); err != nil {
			s.log.Warn("dropping the part record of a committed batch", "device", device, "id", id, "err", err)
		}
	}
	return nil
}

func kvSeq(device, storeID string, seq uint64) string {
	return fmt.Sprintf("q.%s.%s.%d", kvDev(device), hex.EncodeToString([]byte(storeID)), seq)
}

func kvPart(device, id string, index int) string {
	return fmt.Sprintf("p.%s.%s.%05d", kvDev(device), id, index)
}

// BySeq implements Store.
func (s *KVStore) BySeq(device, storeID string, seq uint64) (string, bool, error) {
	var id string
	found, err := s.get(kvSeq(device, storeID, seq), &id)
	if err != nil {
		return "", false, fmt.Errorf("read seq %d of %s/%s: %w", seq, device, storeID, err)
	}
	return id, found, nil
}

func (s *KVStore) partKeys(device, id string) ([]string, error) {
	return s.keysMatching(fmt.Sprintf("p.%s.%s.*", kvDev(device), id), "listing batch parts")
}

// keysMatching lists the keys of pattern in order (what: for the log
// line of a watcher that does not stop).
func (s *KVStore) keysMatching(pattern, what string) ([]string, error) {
	w, err := s.kv.Watch(pattern, nats.IgnoreDeletes(), nats.MetaOnly())
	if err != nil {
		return nil, err
	}
	defer s.stopWatch(w, what)
	var keys []string
	for e := range w.Updates() {
		if e == nil {
			break
		}
		keys = append(keys, e.Key())
	}
	sort.Strings(keys)
	return keys, nil
}

// Parts implements Store.
func (s *KVStore) Parts(device, id string) ([][]byte, error) {
	keys, err := s.partKeys(device, id)
	if err != nil {
		return nil, fmt.Errorf("list parts of %s/%s: %w", device, id, err)
	}
	return s.values(keys, "part")
}

// values reads keys in order; a key deleted since it was listed is left
// out.
func (s *KVStore) values(keys []string, what string) ([][]byte, error) {
	out := make([][]byte, 0, len(keys))
	for _, k := range keys {
		e, err := s.kv.Get(k)
		if errors.Is(err, nats.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s %s: %w", what, k, err)
		}
		out = append(out, e.Value())
	}
	return out, nil
}

// PutDevice implements Store (only the status part).
func (s *KVStore) PutDevice(device string, ds DeviceState) error {
	return s.put("s."+kvDev(device), kvStatus{Mode: ds.Mode, Online: ds.Online, StatusAt: ds.StatusAt,
		StoreID: ds.StatusStoreID, Outbox: ds.StatusOutbox})
}

// DeadLetters implements Store.
func (s *KVStore) DeadLetters(limit int) ([]DeadLetter, error) {
	w, err := s.kv.Watch("x.>", nats.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	defer s.stopWatch(w, "listing dead letters")
	var out []DeadLetter
	for e := range w.Updates() {
		if e == nil {
			break // initial values done
		}
		var dl DeadLetter
		if err := json.Unmarshal(e.Value(), &dl); err != nil {
			s.log.Warn("unreadable dead letter not listed", "key", e.Key(), "err", err)
			continue
		}
		if err := s.joinChunks(e.Key(), &dl); err != nil {
			return nil, err
		}
		out = append(out, dl)
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out, nil
}

// stopWatch ends a listing's watcher (its subscription on the server).
func (s *KVStore) stopWatch(w nats.KeyWatcher, what string) {
	if err := w.Stop(); err != nil {
		s.log.Warn("ending a KV watcher", "while", what, "err", err)
	}
}

// Close implements Store (the connection is the JetStream's).
func (s *KVStore) Close() error { return nil }

// kvChunk bounds one KV value: NATS's default max_payload is 1 MiB, and a
// parked batch joined from parts can be many times that.
const kvChunk = 512 << 10

// putDeadLetter stores dl; a payload larger than kvChunk goes first, in
// chunks under "y.<device>.<id>.<n>", and the dead letter records how many.
func (s *KVStore) putDeadLetter(device, id string, dl *DeadLetter) error {
	if len(dl.Payload) <= kvChunk {
		return s.put("x."+kvDev(device)+"."+id, dl)
	}
	head := *dl
	head.Payload = nil
	for off := 0; off < len(dl.Payload); off += kvChunk {
		end := min(off+kvChunk, len(dl.Payload))
		if _, err := s.kv.Put(fmt.Sprintf("y.%s.%s.%05d", kvDev(device), id, head.PayloadChunks), dl.Payload[off:end]); err != nil {
			return fmt.Errorf("payload chunk %d: %w", head.PayloadChunks, err)
		}
		head.PayloadChunks++
	}
	return s.put("x."+kvDev(device)+"."+id, head)
}

// joinChunks reads back the payload of a dead letter stored in chunks.
func (s *KVStore) joinChunks(key string, dl *DeadLetter) error {
	if dl.PayloadChunks == 0 {
		return nil
	}
	rest, _ := strings.CutPrefix(key, "x.")
	for i := range dl.PayloadChunks {
		e, err := s.kv.Get(fmt.Sprintf("y.%s.%05d", rest, i))
		if err != nil {
			return fmt.Errorf("read dead letter %s chunk %d: %w", key, i, err)
		}
		dl.Payload = append(dl.Payload, e.Value()...)
	}
	dl.PayloadChunks = 0
	return nil
}
