package daemon

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/cmd/agorad/internal/metrics"
	"github.com/agora/agorad/cmd/internal/control"
	"github.com/agora/agorad/sync/protocol"
)

// status reports what the daemon is doing: Prometheus gauges and counters,
// link changes (with the offline sound), /healthz, the retained status on
// MQTT and agoractl status.
// maxParkedShown bounds the parked entries agoractl status lists.
const maxParkedShown = 10

type status struct {
	*core
	version string
	started time.Time
	speech  *speech
	storage *storageHealth // health.go

	refused  atomic.Uint64 // writes refused for a full disk (caps: Stats.Refused)
	reported atomic.Int64  // the listen buffer size the last rendered status said (-1: none yet)
	// offlineSince is when the link went down (unix ns); 0 while online or
	// before the first connect (then: since started).
	offlineSince atomic.Int64
	everOnline   atomic.Bool
}

// noteRefusal counts what the store refused. Cap refusals are counted by
// the store itself (Stats.Refused); a full disk is counted here.
func (rep *status) noteRefusal(err error) {
	rep.storage.report(err)
	switch {
	case errors.Is(err, buffer.ErrDiskFull):
		rep.refused.Add(1)
		rep.met.Refused("disk_full")
	case errors.Is(err, buffer.ErrFull):
		rep.met.Refused("cap")
	}
}

// watchOnline turns link changes into status, metrics and a sound.
func (rep *status) watchOnline(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case up := <-rep.up.OnlineChanged():
			rep.met.SetOnline(up)
			rep.noteLink(up, time.Now())
			if !up {
				rep.sounds.Play("offline")
				rep.log.Warn("backend link down; buffering on the device")
			} else {
				rep.log.Info("backend link up")
			}
		}
	}
}

func (rep *status) refreshGauges(ctx context.Context) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	var reconnects uint64
	for {
		rep.updateGauges()
		for n := rep.up.Stats().Reconnects; reconnects < n; reconnects++ {
			rep.met.Reconnect()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (rep *status) updateGauges() {
	if n, err := rep.store.ListenCount(); err == nil {
		rep.met.SetListenBuffer(n)
	}
	if n, err := rep.store.OutboxCount(); err == nil {
		rep.met.SetOutbox(n)
	}
	if st, err := rep.store.Stats(); err == nil {
		rep.met.SetAudioJournal(st.JournalPending)
		rep.met.SetStoreSync(st.SyncFailures, st.SyncFailing != "")
	}
	rep.met.SetOnline(rep.up.Online())
	us := rep.up.Stats()
	rep.met.SetUnconfirmed(us.Unconfirmed)
	rep.met.SetParked(us.Parked)
	rep.met.SetOutboxStuck(us.StuckFor)
}

// problems lists degraded parts that do not stop the voice path.
func (rep *status) problems() []string {
	var p []string
	if s := rep.storage.problem(); s != "" {
		p = append(p, s)
	}
	if st, err := rep.store.Stats(); err == nil && st.SyncFailing != "" {
		p = append(p, fmt.Sprintf("store: periodic fsync failing (%d failures since start: %s): notes accepted since the last good sync can be lost on a power cut; agorad doctor checks the disk",
			st.SyncFailures, st.SyncFailing))
	}
	if m := rep.met.Problem(); m != "" {
		p = append(p, "metrics endpoint: "+m)
	}
	if n := rep.up.Stats().Unconfirmed; n > 0 {
		p = append(p, fmt.Sprintf("%d outbox entries accepted by the broker but not confirmed by the backend: check ACLs and the bridge", n))
	}
	if n := rep.up.Stats().Parked; n > 0 {
		p = append(p, fmt.Sprintf("%d outbox entries refused by the backend (parked as dead letters there), kept on the device: agoractl status lists them", n))
	}
	return p
}

func (rep *status) health() metrics.Health {
	h := metrics.Health{OK: true, Online: rep.up.Online(), Mode: string(rep.router.Mode())}
	if _, err := rep.store.ListenCount(); err != nil {
		h.OK, h.Reason = false, "store: "+err.Error()
	}
	if s := rep.storage.problem(); h.OK && s != "" {
		h.OK, h.Reason = false, s
	}
	if h.OK {
		if why := rep.offlineTooLong(time.Now()); why != "" {
			h.OK, h.Reason = false, why
		}
	}
	h.Problems = rep.problems()
	return h
}

func (rep *status) protocol() protocol.Status {
	n, _ := rep.store.ListenCount()
	rep.reported.Store(int64(n))
	return protocol.Status{Mode: string(rep.router.Mode()), Buffered: n, Version: rep.version, Model: rep.speech.model,
		StoreID: rep.store.StoreID(), UpdatedAt: time.Now(), Storage: rep.storage.protocol()}
}

// control is the status agoractl shows.
func (rep *status) control() (control.Status, error) {
	st := control.Status{
		DeviceID: rep.cfg.DeviceID, Mode: string(rep.router.Mode()), Online: rep.up.Online(),
		Model: rep.speech.model, Version: rep.version, UptimeSeconds: time.Since(rep.started).Seconds(),
		Refused: rep.refused.Load(), Transcriptions: rep.speech.heard.Load(),
	}
	us := rep.up.Stats()
	st.Unconfirmed, st.StuckSeconds, st.Parked = us.Unconfirmed, us.StuckFor.Seconds(), us.Parked
	for i, p := range rep.up.Parked() {
		if i == maxParkedShown {
			break
		}
		st.ParkedEntries = append(st.ParkedEntries, control.ParkedEntry{ID: p.ID, Seq: p.Seq, Reason: p.Reason, At: p.At})
	}
	st.Problems = rep.problems()
	st.Storage = rep.storage.summary()
	if g := rep.speech.levels.Load(); g != nil {
		st.Levels = levelsOf(g.Snapshot(), g.Config().Enabled)
	}
	var err error
	if st.Buffered, err = rep.store.ListenCount(); err != nil {
		return st, fmt.Errorf("count listen buffer: %w", err)
	}
	if st.Outbox, err = rep.store.OutboxCount(); err != nil {
		return st, fmt.Errorf("count outbox: %w", err)
	}
	if s, err := rep.store.Stats(); err == nil {
		for _, n := range s.Refused {
			st.Refused += uint64(n)
		}
	}
	if last, at := rep.router.Last(); !at.IsZero() {
		st.LastUtterance = &control.LastUtterance{Text: last.Text, At: at}
	}
	speechStatus(rep.replies, &st)
	return st, nil
}
