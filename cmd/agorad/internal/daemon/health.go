package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/buffer/health"
	"github.com/agora/agorad/cmd/agorad/internal/metrics"
	"github.com/agora/agorad/cmd/agorad/internal/spool"
	"github.com/agora/agorad/sync/protocol"
)

// ErrStorageReplaced: the state directory was replaced while the daemon ran
// (its file system unmounted and another, or the card again, mounted in its
// place) and the new one is writable. The store in this process holds the
// old directory's files; only a restart opens what is there now, through
// the open-time checks. cmd/agorad exits 6 for it; systemd restarts.
var ErrStorageReplaced = errors.New("state directory replaced while running: restarting to open the one there now")

// earconPlayer plays an earcon by name (*sounder).
type earconPlayer interface{ Play(name string) }

// unstoredSender publishes a message that is not stored (*uplink.Client).
type unstoredSender interface {
	Online() bool
	PublishUnstored(ctx context.Context, topic string, payload []byte) error
}

// storageHealth watches the state directory (buffer/health) and tells of
// its failures: the error earcon once per episode, the log, the metric
// agorad_storage_failed, agoractl status and /healthz (a problem naming the
// failure and the fix) and the retained MQTT status (its storage field).
type storageHealth struct {
	mon      *health.Monitor
	stateDir string // as the operator configured it
	sounds   earconPlayer
	met      *metrics.Storage
	publish  func() // asks for a fresh retained status
	log      *slog.Logger
	told     uint64 // the last episode announced

	deviceID string
	up       unstoredSender
	sendMu   sync.Mutex   // one unstored publish at a time: they reach the broker in order
	spool    *spool.Spool // nil: storage.spool_bytes 0
	store    *buffer.Store
	settle   func() error // Router.Settle: what a wake owed while the store had failed
}

func newStorageHealth(c *core, publish func()) (*storageHealth, error) {
	h := &storageHealth{}
	dir := c.store.Dir()
	mon, err := health.New(health.Options{
		Dir: dir, Identity: buffer.IdentityPath(dir), Logger: c.log,
		// OK again only once the store itself writes (after a disk-full
		// failure it reopens Badger on that write) and has taken what was
		// held in memory meanwhile, in order.
		Recover: func(context.Context) error {
			if err := c.store.CheckWritable(); err != nil {
				return err
			}
			return h.drain()
		},
	})
	if err != nil {
		return nil, err
	}
	*h = storageHealth{mon: mon, stateDir: c.cfg.StateDir, sounds: c.sounds, met: c.met.NewStorage(),
		publish: publish, log: c.log.With("component", "storage-health"), deviceID: c.cfg.DeviceID, store: c.store}
	if c.up != nil {
		h.up = c.up
	}
	if n := c.cfg.Storage.SpoolBytes; n > 0 {
		if h.spool, err = spool.New(n); err != nil {
			return nil, &ConfigError{fmt.Errorf("storage.spool_bytes: %w", err)}
		}
	}
	return h, nil
}

// report hands an error of a store write to the monitor: a storage
// failure is told at once, not at the next probe.
func (h *storageHealth) report(err error) {
	if h == nil || err == nil {
		return
	}
	if errors.Is(err, buffer.ErrDiskFull) {
		h.mon.Fail(health.Full, err)
		return
	}
	h.mon.Report(err)
}

// run probes until ctx ends, tells every change, and ends with
// ErrStorageReplaced when a replaced state directory is usable.
func (h *storageHealth) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = h.mon.Run(ctx) }()
	defer func() { cancel(); <-done }()
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if n := h.held(); n > 0 {
				h.log.Error("stopping with utterances held in memory that the failed store never took: they are lost", "held", n)
			}
			return nil
		case <-h.mon.Changes():
			h.tell()
		case <-t.C:
		}
		if h.replacedUsable() {
			st := h.mon.State()
			h.log.Error("the state directory was replaced while running and the new one is writable: exiting for a restart, "+
				"which opens it with the open-time checks; what the old one held stays on its own file system",
				"dir", h.mon.Dir(), "err", st.Err)
			return ErrStorageReplaced
		}
	}
}

// replacedUsable: failed as replaced, and what is at the path now passes
// the probe (without comparing device and inode).
func (h *storageHealth) replacedUsable() bool {
	st := h.mon.State()
	if st.Phase == health.OK || st.Kind != health.Replaced {
		return false
	}
	return health.Probe(h.mon.Dir(), "", filepath.Dir(h.mon.Dir()), health.FileID{}) == nil
}

// tell announces the current state.
func (h *storageHealth) tell() {
	st := h.mon.State()
	what, fix := st.Describe(h.stateDir)
	switch {
	case st.Phase == health.OK:
		h.met.Set("")
		h.log.Info("storage ok again", "episode", st.Episode, "failed_for", time.Since(st.Since).Round(time.Second))
	case st.Episode > h.told:
		h.told = st.Episode
		h.met.Episode()
		h.met.Set(string(st.Kind))
		h.sounds.Play("error")
		h.log.Error("storage failed: error earcon played", "what", what, "fix", fix)
	default:
		h.met.Set(string(st.Kind))
		h.log.Error("storage still failed", "what", what, "fix", fix)
	}
	h.publish()
}

// problem is the line for agoractl status and /healthz ("" while ok).
func (h *storageHealth) problem() string {
	if h == nil {
		return ""
	}
	st := h.mon.State()
	if st.Phase == health.OK {
		return ""
	}
	what, fix := st.Describe(h.stateDir)
	if n := h.held(); n > 0 {
		what += fmt.Sprintf("; %d utterance(s) held in memory until the store writes again (lost if agorad stops first)", n)
	}
	return fmt.Sprintf("storage: %s -- fix: %s", what, fix)
}

// summary is agoractl status's storage line: ok, failed (kind) or recovering.
func (h *storageHealth) summary() string {
	if h == nil {
		return ""
	}
	st := h.mon.State()
	if st.Phase == health.OK {
		return "ok"
	}
	return fmt.Sprintf("%s (%s since %s)", st.Phase, st.Kind, st.Since.Local().Format(time.TimeOnly))
}

// protocol is the storage field of the retained status (nil while ok).
func (h *storageHealth) protocol() *protocol.StorageHealth {
	if h == nil {
		return nil
	}
	st := h.mon.State()
	if st.Phase == health.OK {
		return nil
	}
	return &protocol.StorageHealth{State: string(st.Phase), Kind: string(st.Kind), Since: protocol.FormatTime(st.Since),
		Episode: st.Episode, Error: st.Err, Held: h.held()}
}

// leaveUnclosed says why the store must not be closed ("" when it may):
// the state directory is gone or another directory is at its path. Badger's
// close flushes its memtable into new files it opens by path, so they would
// land in the new directory (or nowhere) while its MANIFEST, an open file,
// names them in the old one: measured, the old store was then refused at
// the next start ("000001.sst: named in MANIFEST but missing"). Left
// unclosed, everything acknowledged is in the old directory's write-ahead
// log, replayed when that directory is opened again.
func (h *storageHealth) leaveUnclosed() string {
	if h == nil {
		return ""
	}
	st := h.mon.State()
	if st.Phase == health.OK || (st.Kind != health.Gone && st.Kind != health.Replaced) {
		return ""
	}
	what, _ := st.Describe(h.stateDir)
	return what
}

// storageLeaveUnclosed is leaveUnclosed for a daemon whose start may have
// failed before its status existed.
func (rep *status) storageLeaveUnclosed() string {
	if rep == nil {
		return ""
	}
	return rep.storage.leaveUnclosed()
}

// isFailure: err is a storage failure (not a cap, not a closed store).
func isFailure(err error) bool {
	if errors.Is(err, buffer.ErrDiskFull) {
		return true
	}
	_, ok := health.Classify(err)
	return ok
}

// spoolable: the failure in err may end with the store writing again in
// this process (space freed, a transient I/O error), so what is held in
// memory can reach it. A file system in ext4's emergency read-only state
// (measured: a remount rw leaves it read-only), a directory gone or
// replaced never come back in place: holding there would accept what the
// repair's stop then loses, so it is refused instead.
func spoolable(err error) bool {
	if errors.Is(err, buffer.ErrDiskFull) {
		return true
	}
	switch k, ok := health.Classify(err); {
	case !ok:
		return false
	case k == health.ReadOnly, k == health.Gone, k == health.Replaced:
		return false
	}
	return true
}

// canKeep: an utterance said in mode that the store refused with err can
// still be kept otherwise now: a storage failure, and the link up (in
// feedback mode) or room in the memory spool.
func (h *storageHealth) canKeep(err error, mode buffer.Mode) bool {
	if h == nil || !isFailure(err) {
		return false
	}
	return (mode == buffer.ModeFeedback && h.up != nil && h.up.Online()) || (h.spool != nil && spoolable(err) && h.spool.Room())
}

// keep is RouterOptions.Keep: what the failed store refused is sent
// unstored (feedback mode, link up) or, when the failure may end in place
// (spoolable), held in the memory spool until the store writes again.
// false: nothing could keep it; the router refuses it audibly.
func (h *storageHealth) keep(rec buffer.Record, mode buffer.Mode, storeErr error) (string, string, bool) {
	if h == nil || !isFailure(storeErr) || rec.ID == "" {
		return "", "", false
	}
	h.report(storeErr)
	if mode == buffer.ModeFeedback && h.sendUnstored(rec, storeErr) {
		return rec.ID, KeptUnstored, true
	}
	if h.spool == nil || !spoolable(storeErr) {
		h.log.Error("utterance refused: the store failed and nothing can keep it", "id", rec.ID, "mode", mode, "store_err", storeErr)
		return "", "", false
	}
	if err := h.spool.Add(spool.Item{Rec: rec, Mode: mode}); err != nil {
		h.log.Error("utterance refused: the store failed and nothing can keep it", "id", rec.ID, "mode", mode, "store_err", storeErr, "err", err)
		return "", "", false
	}
	h.met.Spooled(h.spool.Len())
	h.log.Warn("utterance held in memory until the store writes again", "id", rec.ID, "mode", mode, "held", h.spool.Len(), "store_err", storeErr)
	h.publish()
	return rec.ID, KeptInMemory, true
}

// How an utterance the failed store refused was kept (Outcome.KeptAs,
// agoractl say's "stored").
const (
	KeptUnstored = "sent_unstored"  // published to the backend without being stored
	KeptInMemory = "held_in_memory" // in the memory spool until the store writes again
)

// sendUnstored publishes a feedback-mode utterance the store refused while
// the link is up: QoS 1, waiting for the PUBACK, one at a time (so in
// order), marked unstored, under the record's id.
func (h *storageHealth) sendUnstored(rec buffer.Record, storeErr error) bool {
	if h.up == nil || !h.up.Online() {
		return false
	}
	topic, payload, err := protocol.RenderUnstored(h.deviceID, rec.ID, rec, time.Now())
	if err != nil {
		h.log.Error("render unstored utterance", "err", err)
		return false
	}
	h.sendMu.Lock()
	defer h.sendMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.up.PublishUnstored(ctx, topic, payload); err != nil {
		h.log.Warn("sending an utterance unstored failed", "id", rec.ID, "err", err)
		return false
	}
	h.met.Unstored()
	h.log.Warn("utterance sent to the backend without being stored: the store failed", "id", rec.ID, "store_err", storeErr)
	return true
}

// drain writes what the spool holds into the store, in order (part of
// Recover: the storage is OK again only when it is empty).
func (h *storageHealth) drain() error {
	if h.spool == nil || h.spool.Len() == 0 {
		return h.settleOwed()
	}
	n, err := h.spool.Drain(func(it spool.Item) error {
		var err error
		if it.Mode == buffer.ModeListen {
			_, err = h.store.AppendListen(it.Rec)
		} else if err = h.settleOwed(); err == nil {
			// After the notes of before (and a wake's owed flush of
			// them): what was said in feedback mode.
			_, err = h.store.EnqueueUtterance(it.Rec)
		}
		return err
	})
	h.met.Spooled(h.spool.Len())
	if n > 0 {
		h.log.Info("utterances held in memory written to the store", "written", n, "still_held", h.spool.Len())
	}
	if err != nil {
		return fmt.Errorf("write utterances held in memory to the store: %w", err)
	}
	return h.settleOwed()
}

func (h *storageHealth) settleOwed() error {
	if h.settle == nil {
		return nil
	}
	return h.settle()
}

// held is the number of utterances in the memory spool.
func (h *storageHealth) held() int {
	if h == nil || h.spool == nil {
		return 0
	}
	return h.spool.Len()
}
