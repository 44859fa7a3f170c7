package bridge

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the bridge's Prometheus collectors. Register them with
// Register; a nil *Metrics records nothing.
type Metrics struct {
	Messages    *prometheus.CounterVec   // by type and outcome
	BadInput    *prometheus.CounterVec   // by reason
	Runs        *prometheus.CounterVec   // graph runs by result
	RunSeconds  prometheus.Histogram     // one graph run, POST to RUN_FINISHED
	Handover    prometheus.Histogram     // device created_at → handed over (ack sent)
	Parked      prometheus.Counter       // messages parked as dead letters
	Replies     prometheus.Counter       // reply commands published
	StreamParts prometheus.Counter       // parts of answers streamed while the graph wrote them
	Outcomes    *prometheus.CounterVec   // device acks to replies, by outcome
	DeviceLag   *prometheus.GaugeVec     // per device: seconds from created_at to hand-over of its last message
	DevicesSeen prometheus.Gauge         // devices with a worker in this process
	Online      *prometheus.GaugeVec     // per device: 1 online, 0 offline (from status / last will)
	Retries     *prometheus.CounterVec   // retries by error kind
	Stage       *prometheus.HistogramVec // per stage (store, publish)
}

// NewMetrics builds the collectors (namespace agora_bridge).
func NewMetrics() *Metrics {
	const ns = "agora_bridge"
	return &Metrics{
		Messages: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "messages_total",
			Help: "Device messages consumed, by type and outcome (run, duplicate, parked, invalid, status, event)."}, []string{"type", "outcome"}),
		BadInput: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "bad_input_total",
			Help: "Device messages or agent streams refused, by reason."}, []string{"reason"}),
		Runs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "runs_total",
			Help: "AG-UI runs posted, by result (ok or the error kind)."}, []string{"result"}),
		RunSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "run_duration_seconds",
			Help: "One AG-UI run from POST to RUN_FINISHED.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}),
		Handover: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "handover_lag_seconds",
			Help: "From the device's created_at to the bridge's ack.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 18)}),
		Parked: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "parked_total",
			Help: "Messages parked as dead letters after bounded retries."}),
		Replies: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "replies_total",
			Help: "Reply commands published to devices."}),
		StreamParts: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "stream_parts_total",
			Help: "Reply parts sent while the graph was still writing the answer (before the run finished)."}),
		Outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "reply_outcomes_total",
			Help: "Device acks to reply commands, by outcome."}, []string{"outcome"}),
		DeviceLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "device_lag_seconds",
			Help: "Per device: seconds from created_at to hand-over of its last message."}, []string{"device"}),
		DevicesSeen: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "devices",
			Help: "Devices this process has seen."}),
		Online: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "device_online",
			Help: "Per device: 1 when its last status said online, 0 after a goodbye or its last will."}, []string{"device"}),
		Retries: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "retries_total",
			Help: "Run retries, by the error kind that caused them."}, []string{"kind"}),
		Stage: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "stage_seconds",
			Help: "Bridge stages other than the run (store, publish).", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}, []string{"stage"}),
	}
}

// Register adds the collectors to r.
func (m *Metrics) Register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.Messages, m.BadInput, m.Runs, m.RunSeconds, m.Handover, m.Parked,
		m.Replies, m.StreamParts, m.Outcomes, m.DeviceLag, m.DevicesSeen, m.Online, m.Retries, m.Stage} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}
