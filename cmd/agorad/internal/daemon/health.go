package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/buffer/health"
	"github.com/agora/agorad/cmd/agorad/internal/metrics"
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
	sendMu   sync.Mutex // one unstored publish at a time: they reach the broker in order
}

func newStorageHealth(c *core, publish func()) (*storageHealth, error) {
	dir := c.store.Dir()
	mon, err := health.New(health.Options{
		Dir: dir, Identity: buffer.IdentityPath(dir), Logger: c.log,
		// OK again only once the store itself writes (after a disk-full
		// failure it reopens Badger on that write).
		Recover: func(context.Context) error { return c.store.CheckWritable() },
	})
	if err != nil {
		return nil, err
	}
	h := &storageHealth{mon: mon, stateDir: c.cfg.StateDir, sounds: c.sounds, met: c.met.NewStorage(),
		publish: publish, log: c.log.With("component", "storage-health"), deviceID: c.cfg.DeviceID}
	if c.up != nil {
		h.up = c.up
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
		Episode: st.Episode, Error: st.Err}
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

// canSend: an utterance the store refused with err can still be sent
// unstored now (a storage failure, the link up).
func (h *storageHealth) canSend(err error) bool {
	return h != nil && h.up != nil && isFailure(err) && h.up.Online()
}

// sendUnstored publishes a feedback-mode utterance the store refused
// (RouterOptions.Unstored): only for a storage failure and while the link
// is up, QoS 1, waiting for the PUBACK, one at a time (so in order),
// marked unstored. false: the caller refuses it (audibly).
func (h *storageHealth) sendUnstored(rec buffer.Record, storeErr error) (string, bool) {
	if !h.canSend(storeErr) {
		return "", false
	}
	h.report(storeErr)
	id := rec.ID // the router's: the same as a failed commit's entry, if that survives
	if id == "" {
		u, err := uuid.NewV7()
		if err != nil {
			return "", false
		}
		id = u.String()
	}
	topic, payload, err := protocol.RenderUnstored(h.deviceID, id, rec, time.Now())
	if err != nil {
		h.log.Error("render unstored utterance", "err", err)
		return "", false
	}
	h.sendMu.Lock()
	defer h.sendMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.up.PublishUnstored(ctx, topic, payload); err != nil {
		h.log.Error("utterance refused: the store failed and sending it unstored failed", "store_err", storeErr, "err", err)
		return "", false
	}
	h.met.Unstored()
	h.log.Warn("utterance sent to the backend without being stored: the store failed", "id", id, "store_err", storeErr)
	return id, true
}
