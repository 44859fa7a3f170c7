package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Replies are the metrics of spoken replies (issue 7), registered in the
// same private registry by NewReplies.
type Replies struct {
	received   prometheus.Counter
	duplicates prometheus.Counter
	outcomes   *prometheus.CounterVec
	firstAudio prometheus.Histogram
	waiting    prometheus.Gauge
	speaking   prometheus.Gauge
}

// NewReplies registers the reply metrics. Call it once per Metrics.
func (m *Metrics) NewReplies() *Replies {
	r := &Replies{
		received: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "replies_received_total",
			Help: "Reply commands stored (redeliveries of a stored reply not counted)."}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "replies_duplicate_total",
			Help: "Redelivered reply commands recognised by id and not queued again."}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "replies_total",
			Help: "Reply outcomes acknowledged to the backend: spoken, interrupted, expired, held, failed."}, []string{"outcome"}),
		firstAudio: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: "reply_first_audio_seconds",
			Help:    "From a reply's arrival (or its turn, when it waited) to its first sample handed to the audio device.",
			Buckets: []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2}}),
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "replies_waiting",
			Help: "Replies stored and not yet spoken (queued or held)."}),
		speaking: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "speaking",
			Help: "1 while a reply is being spoken."}),
	}
	m.reg.MustRegister(r.received, r.duplicates, r.outcomes, r.firstAudio, r.waiting, r.speaking)
	for _, o := range []string{"spoken", "interrupted", "expired", "held", "failed"} {
		r.outcomes.WithLabelValues(o)
	}
	return r
}

// Received counts a stored reply; duplicate a recognised redelivery.
func (r *Replies) Received(duplicate bool) {
	if duplicate {
		r.duplicates.Inc()
	} else {
		r.received.Inc()
	}
}

// Outcome counts one acknowledged outcome.
func (r *Replies) Outcome(outcome string) { r.outcomes.WithLabelValues(outcome).Inc() }

// FirstAudio records the time to a reply's first audio sample.
func (r *Replies) FirstAudio(d time.Duration) { r.firstAudio.Observe(d.Seconds()) }

// SetState sets the speaking and waiting gauges.
func (r *Replies) SetState(speaking bool, waiting int) {
	if speaking {
		r.speaking.Set(1)
	} else {
		r.speaking.Set(0)
	}
	r.waiting.Set(float64(waiting))
}
