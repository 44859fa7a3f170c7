package metrics

import (
	"testing"
	"time"
)

func TestReplies(t *testing.T) {
	m := New("test")
	r := m.NewReplies()
	r.Received(false)
	r.Received(false)
	r.Received(true)
	r.Outcome("spoken")
	r.Outcome("held")
	r.FirstAudio(40 * time.Millisecond)
	r.SetState(true, 3)
	fams := scrape(t, start(t, m, nil))
	for name, want := range map[string]float64{
		"agorad_replies_received_total":  2,
		"agorad_replies_duplicate_total": 1,
		"agorad_replies_waiting":         3,
		"agorad_speaking":                1,
	} {
		f := fams[name]
		if f == nil || len(f.Metric) != 1 {
			t.Errorf("%s missing", name)
			continue
		}
		v := f.Metric[0].GetCounter().GetValue() + f.Metric[0].GetGauge().GetValue()
		if v != want {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
	outcomes := map[string]float64{}
	for _, mt := range fams["agorad_replies_total"].GetMetric() {
		outcomes[mt.GetLabel()[0].GetValue()] = mt.GetCounter().GetValue()
	}
	if outcomes["spoken"] != 1 || outcomes["held"] != 1 || len(outcomes) != 5 {
		t.Errorf("outcomes %v", outcomes)
	}
	h := fams["agorad_reply_first_audio_seconds"].GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 1 || h.GetSampleSum() != 0.04 {
		t.Errorf("first audio histogram %v", h)
	}
}
