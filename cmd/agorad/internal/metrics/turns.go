package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Turns is the timeline of a spoken turn (cmd/agorad/internal/turns),
// registered in the same private registry by NewTurns.
type Turns struct {
	stage *prometheus.HistogramVec
}

// NewTurns registers agorad_turn_stage_seconds with a series for each of
// stages. Call it once per Metrics.
func (m *Metrics) NewTurns(stages []string) *Turns {
	t := &Turns{stage: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "turn_stage_seconds",
		Help:    "From the end of speech (last speech sample) to each stage of the turn: turn_end, transcribed, published, reply, first_audio.",
		Buckets: []float64{0.1, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 4, 5, 7.5, 10, 20, 60}},
		[]string{"stage"})}
	m.reg.MustRegister(t.stage)
	for _, s := range stages {
		t.stage.WithLabelValues(s)
	}
	return t
}

// TurnStage records one stage's time since the end of speech.
func (t *Turns) TurnStage(stage string, d time.Duration) {
	t.stage.WithLabelValues(stage).Observe(d.Seconds())
}
