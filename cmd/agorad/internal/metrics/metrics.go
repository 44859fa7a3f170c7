// Package metrics exposes agorad's Prometheus metrics (/metrics) and a health
// check (/healthz) on a loopback address. It uses a private registry so
// nothing registered elsewhere in the process leaks into the scrape.
package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const namespace = "agorad"

// Metrics holds the collectors. The daemon calls the recording methods; all
// are safe for concurrent use and cheap (no I/O).
type Metrics struct {
	reg           *prometheus.Registry
	utterances    *prometheus.CounterVec
	transcription prometheus.Histogram
	rtf           prometheus.Histogram
	whisperCalls  prometheus.Counter
	listenBuffer  prometheus.Gauge
	outbox        prometheus.Gauge
	online        prometheus.Gauge
	reconnects    prometheus.Counter
	refused       *prometheus.CounterVec
	journal       prometheus.Gauge
	syncFailures  prometheus.Gauge
	syncFailing   prometheus.Gauge
	vadFrames     *prometheus.CounterVec
	unconfirmed   prometheus.Gauge
	parked        prometheus.Gauge
	stuck         prometheus.Gauge
	listenerErrs  *prometheus.CounterVec
	pttCuts       prometheus.Counter
	pttStuck      prometheus.Counter
	wearerDropped *prometheus.CounterVec

	problemMu sync.Mutex
	problem   string
}

// New creates the collectors and registers them, with the Go runtime and
// process collectors (memory and CPU matter on small devices), in a private
// registry. version goes into agorad_build_info.
func New(version string) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		utterances: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "utterances_total",
			Help: "Utterances transcribed and stored, by the mode they were stored in."}, []string{"mode"}),
		transcription: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: "transcription_seconds",
			Help:    "Wall time of one whisper call.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64}}),
		rtf: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: "transcription_realtime_factor",
			Help:    "Processing time divided by audio duration (below 1: faster than real time).",
			Buckets: []float64{0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1, 1.5, 2, 4}}),
		whisperCalls: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "whisper_calls_total",
			Help: "whisper_full calls (one per utterance, failed ones included)."}),
		listenBuffer: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "listen_buffer_items",
			Help: "Items in the listen buffer."}),
		outbox: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "outbox_items",
			Help: "Outbox entries not yet confirmed by the broker."}),
		online: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "online",
			Help: "1 while the MQTT session is up."}),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "reconnects_total",
			Help: "MQTT connection attempts after the first."}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "refused_total",
			Help: "Items refused because a storage cap was reached, by kind."}, []string{"kind"}),
		journal: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "audio_journal_items",
			Help: "Utterance audio journaled and not yet transcribed (or retained)."}),
		syncFailures: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "store_sync_failures",
			Help: "Failed periodic fsyncs of the store (storage.sync interval) since it opened."}),
		syncFailing: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "store_sync_failing",
			Help: "1 while the store's periodic fsync fails: what was accepted since the last good sync may be lost on a power cut."}),
		vadFrames: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "vad_frames_total",
			Help: `Audio frames by path: "gated" skipped by the energy gate, "vad" sent to Silero.`}, []string{"path"}),
		unconfirmed: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "unconfirmed",
			Help: "Outbox entries PUBACKed by the broker at least mqtt.ack_timeout ago and not confirmed by the backend (mqtt.delivery: backend)."}),
		parked: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "parked",
			Help: "Outbox entries the backend refused and parked as dead letters, kept on the device (agoractl status)."}),
		stuck: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "outbox_stuck_seconds",
			Help: "How long the oldest outbox entry has waited while online, once past mqtt.stuck_after; 0 otherwise."}),
		listenerErrs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "listener_errors_total",
			Help: "Errors of auxiliary listeners (bind failures, accept errors), by listener."}, []string{"listener"}),
		pttCuts: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "ptt_cuts_total",
			Help: "Push-to-talk presses cut at input.ptt.max_utterance (each cut starts a new piece)."}),
		pttStuck: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "ptt_stuck_total",
			Help: "Push-to-talk presses that lasted longer than input.ptt.stuck_after (a key stuck down?)."}),
		wearerDropped: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "wearer_dropped_total",
			Help: "What the wearer gate dropped as quieter than the wearer: utterances (no whisper call) and words (cut from a kept utterance's text)."}, []string{"what"}),
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "build_info",
		Help: "Always 1; the version label says which agorad runs.", ConstLabels: prometheus.Labels{"version": version}})
	build.Set(1)
	m.reg.MustRegister(m.utterances, m.transcription, m.rtf, m.whisperCalls, m.listenBuffer, m.outbox, m.online,
		m.reconnects, m.refused, m.journal, m.syncFailures, m.syncFailing, m.vadFrames, m.pttCuts, m.pttStuck, m.wearerDropped, build,
		m.unconfirmed, m.parked, m.stuck, m.listenerErrs,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Series that exist from the start, so rate() and alerts see a zero
	// rather than nothing.
	for _, mode := range buffer.Modes() {
		m.utterances.WithLabelValues(string(mode))
	}
	for _, p := range []string{"gated", "vad"} {
		m.vadFrames.WithLabelValues(p)
	}
	for _, k := range []string{"listen", "outbox", "journal"} {
		m.refused.WithLabelValues(k)
	}
	for _, l := range []string{"metrics", "control"} {
		m.listenerErrs.WithLabelValues(l)
	}
	return m
}

// Registry is the private registry (for tests and extra collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Utterance counts one stored utterance in mode; the label is the mode's name.
func (m *Metrics) Utterance(mode buffer.Mode) { m.utterances.WithLabelValues(string(mode)).Inc() }

// Transcribed records one whisper call: its wall time and the length of the
// audio it processed. A zero audio duration records no realtime factor.
func (m *Metrics) Transcribed(processing, audio time.Duration) {
	m.whisperCalls.Inc()
	m.transcription.Observe(processing.Seconds())
	if audio > 0 {
		m.rtf.Observe(processing.Seconds() / audio.Seconds())
	}
}

// WhisperCallFailed counts a whisper call that returned an error (no timing).
func (m *Metrics) WhisperCallFailed() { m.whisperCalls.Inc() }

// SetListenBuffer sets the listen-buffer size.
func (m *Metrics) SetListenBuffer(n int) { m.listenBuffer.Set(float64(n)) }

// SetOutbox sets the outbox size.
func (m *Metrics) SetOutbox(n int) { m.outbox.Set(float64(n)) }

// SetAudioJournal sets the number of journaled audio items.
func (m *Metrics) SetAudioJournal(n int) { m.journal.Set(float64(n)) }

// SetStoreSync records the store's periodic fsync failures (buffer.Stats).
func (m *Metrics) SetStoreSync(failures int64, failing bool) {
	m.syncFailures.Set(float64(failures))
	m.syncFailing.Set(map[bool]float64{false: 0, true: 1}[failing])
}

// SetOnline records the MQTT link state.
func (m *Metrics) SetOnline(up bool) {
	if up {
		m.online.Set(1)
	} else {
		m.online.Set(0)
	}
}

// SetUnconfirmed sets the number of entries the backend has not confirmed
// within the ack timeout.
func (m *Metrics) SetUnconfirmed(n int) { m.unconfirmed.Set(float64(n)) }

// SetParked sets the number of outbox entries the backend parked, kept on
// the device.
func (m *Metrics) SetParked(n int) { m.parked.Set(float64(n)) }

// SetOutboxStuck sets how long the head of the outbox has been stuck.
func (m *Metrics) SetOutboxStuck(d time.Duration) { m.stuck.Set(d.Seconds()) }

// ListenerError counts an error of an auxiliary listener ("metrics", "control").
func (m *Metrics) ListenerError(listener string) { m.listenerErrs.WithLabelValues(listener).Inc() }

// PTTCut counts a long push-to-talk press cut into another piece.
func (m *Metrics) PTTCut() { m.pttCuts.Inc() }

// PTTStuck counts a press that outlasted input.ptt.stuck_after.
func (m *Metrics) PTTStuck() { m.pttStuck.Inc() }

// WearerDropped counts an utterance the wearer gate kept from whisper.
func (m *Metrics) WearerDropped() { m.wearerDropped.WithLabelValues("utterance").Inc() }

// WearerWordsDropped counts words the wearer gate cut from a transcript.
func (m *Metrics) WearerWordsDropped(n int) { m.wearerDropped.WithLabelValues("word").Add(float64(n)) }

// Reconnect counts a reconnection attempt.
func (m *Metrics) Reconnect() { m.reconnects.Inc() }

// Refused counts an item refused by a storage cap ("listen", "outbox",
// "journal").
func (m *Metrics) Refused(kind string) { m.refused.WithLabelValues(kind).Inc() }

// VADFrames adds frame counts since the last call (deltas, e.g. from
// segment.Stats differences).
func (m *Metrics) VADFrames(gated, vad int) {
	if gated > 0 {
		m.vadFrames.WithLabelValues("gated").Add(float64(gated))
	}
	if vad > 0 {
		m.vadFrames.WithLabelValues("vad").Add(float64(vad))
	}
}

// Health is the /healthz answer. OK false makes it 503. Being offline is not
// unhealthy by itself: store-and-forward keeps working.
type Health struct {
	OK     bool   `json:"ok"`
	Online bool   `json:"online"`
	Mode   string `json:"mode"`
	Reason string `json:"reason,omitempty"` // why not OK
	// Problems are degraded parts that leave the daemon working (OK stays
	// true): unconfirmed entries, an auxiliary listener down.
	Problems []string `json:"problems,omitempty"`
}

// Handler serves /metrics and /healthz. health is called per request; nil
// means always healthy.
func (m *Metrics) Handler(health func() Health) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		h := Health{OK: true}
		if health != nil {
			h = health()
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if !h.OK {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		json.NewEncoder(w).Encode(h)
	})
	return mux
}

// Listen opens addr, which must be a loopback address: the endpoints have no
// authentication.
func Listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("metrics address %s: %w", addr, err)
	}
	if host != "localhost" {
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("metrics address %s: not a loopback address", addr)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for metrics on %s: %w", addr, err)
	}
	return ln, nil
}

// Serve answers HTTP on ln until ctx ends, then shuts down (in-flight
// scrapes get a second to finish). It returns nil after ctx ended.
func (m *Metrics) Serve(ctx context.Context, ln net.Listener, health func() Health) error {
	srv := &http.Server{
		Handler:           m.Handler(health),
		ReadHeaderTimeout: 5 * time.Second,
		WriteTimeout:      30 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve metrics on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve metrics on %s: %w", ln.Addr(), err)
	}
	return nil
}

// ListenAndServe binds addr and serves until ctx ends, like Listen and Serve,
// but a failure to bind or serve (the port taken by another program) never
// ends it: the error is logged, counted in agorad_listener_errors_total and
// reported by Problem, and binding is retried with backoff (1s doubling to a
// minute). An auxiliary endpoint must not stop the voice path. It returns
// nil when ctx ends.
func (m *Metrics) ListenAndServe(ctx context.Context, addr string, health func() Health, log *slog.Logger) error {
	delay := time.Second
	for ctx.Err() == nil {
		ln, err := Listen(addr)
		if err == nil {
			m.setProblem("")
			if err = m.Serve(ctx, ln, health); err == nil {
				return nil
			}
			delay = time.Second
		}
		m.ListenerError("metrics")
		m.setProblem(err.Error())
		log.Error("metrics endpoint unavailable; the daemon keeps running, retrying", "addr", addr, "retry_in", delay, "err", err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		delay = min(2*delay, time.Minute)
	}
	return nil
}

func (m *Metrics) setProblem(p string) {
	m.problemMu.Lock()
	m.problem = p
	m.problemMu.Unlock()
}

// Problem is the metrics listener's last error while it is not serving,
// "" while it serves (or was never started).
func (m *Metrics) Problem() string {
	m.problemMu.Lock()
	defer m.problemMu.Unlock()
	return m.problem
}
