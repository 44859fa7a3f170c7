package metrics

import "github.com/prometheus/client_golang/prometheus"

// StorageKinds are the kinds of storage failure (buffer/health's Kind
// values), each a label value of agorad_storage_failed.
var StorageKinds = []string{"read_only", "io", "full", "gone", "replaced", "write"}

// Storage are the metrics of the state directory's health (issue 23),
// registered in the same private registry by NewStorage.
type Storage struct {
	failed   *prometheus.GaugeVec
	episodes prometheus.Counter
	unstored prometheus.Counter
	held     prometheus.Gauge
}

// NewStorage registers the storage metrics. Call it once per Metrics.
func (m *Metrics) NewStorage() *Storage {
	s := &Storage{
		failed: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "storage_failed",
			Help: "1 while the state directory is failed (or recovering), by kind of failure; 0 otherwise."}, []string{"kind"}),
		episodes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "storage_failures_total",
			Help: "Storage failure episodes (a failure seen while the storage was ok)."}),
		unstored: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "unstored_sent_total",
			Help: "Utterances the failed store refused and that were published without being stored (PUBACKed)."}),
	}
	s.held = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "spool_items",
		Help: "Utterances held in memory while the store has failed, until it writes again."})
	m.reg.MustRegister(s.failed, s.episodes, s.unstored, s.held)
	for _, k := range StorageKinds {
		s.failed.WithLabelValues(k)
	}
	return s
}

// Set records the current state: kind "" when ok.
func (s *Storage) Set(kind string) {
	for _, k := range StorageKinds {
		v := 0.0
		if k == kind {
			v = 1
		}
		s.failed.WithLabelValues(k).Set(v)
	}
}

// Episode counts a new failure episode.
func (s *Storage) Episode() { s.episodes.Inc() }

// Unstored counts an utterance published without being stored.
func (s *Storage) Unstored() { s.unstored.Inc() }

// Spooled sets the number of utterances held in memory.
func (s *Storage) Spooled(n int) { s.held.Set(float64(n)) }
