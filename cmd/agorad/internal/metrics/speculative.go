package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Speculative counts the whisper runs started during the end-of-turn wait
// (issue 22), registered by NewSpeculative.
type Speculative struct {
	runs    *prometheus.CounterVec
	dropped prometheus.Counter
}

// NewSpeculative registers the speculative-run metrics. Call it once per
// Metrics.
func (m *Metrics) NewSpeculative() *Speculative {
	s := &Speculative{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "whisper_speculative_total",
			Help: "Speculative whisper runs in the end-of-turn wait: used (the turn ended on them), dropped (speech went on)."},
			[]string{"outcome"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "whisper_speculative_dropped_seconds_total",
			Help: "Whisper time spent on speculative runs that were dropped: the CPU the early start costs."}),
	}
	m.reg.MustRegister(s.runs, s.dropped)
	for _, o := range []string{"used", "dropped"} {
		s.runs.WithLabelValues(o)
	}
	return s
}

// Used counts a speculative run the turn ended on.
func (s *Speculative) Used() { s.runs.WithLabelValues("used").Inc() }

// Dropped counts a speculative run dropped after spending took of whisper.
func (s *Speculative) Dropped(took time.Duration) {
	s.runs.WithLabelValues("dropped").Inc()
	s.dropped.Add(took.Seconds())
}
