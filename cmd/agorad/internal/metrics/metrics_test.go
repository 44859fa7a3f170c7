package metrics

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/cmd/internal/testrun"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

func start(t *testing.T, m *Metrics, health func() Health) string {
	t.Helper()
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	run := testrun.Start(t, "Serve", func(ctx context.Context) error { return m.Serve(ctx, ln, health) })
	t.Cleanup(func() {
		if err := run.Stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// value finds the sample of family name whose labels include want.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("metric %s not exposed", name)
	}
	for _, m := range f.Metric {
		match := true
		for k, v := range want {
			found := false
			for _, lp := range m.Label {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
				}
			}
			match = match && found
		}
		if match {
			return m
		}
	}
	t.Fatalf("metric %s%v not exposed", name, want)
	return nil
}

func TestScrape(t *testing.T) {
	m := New("1.2.3")
	base := start(t, m, nil)

	fams := scrape(t, base)
	if v := value(t, fams, "agorad_utterances_total", map[string]string{"mode": "feedback"}).Counter.GetValue(); v != 0 {
		t.Fatalf("initial utterances = %v", v)
	}

	m.Utterance(buffer.ModeListen)
	m.Utterance(buffer.ModeListen)
	m.Utterance(buffer.ModeFeedback)
	m.Transcribed(500*time.Millisecond, 2*time.Second)
	m.Transcribed(3*time.Second, 2*time.Second)
	m.WhisperCallFailed()
	m.SetListenBuffer(7)
	m.SetOutbox(3)
	m.SetAudioJournal(1)
	m.SetStoreSync(4, true)
	m.SetOnline(true)
	m.Reconnect()
	m.Reconnect()
	m.Refused("listen")
	m.VADFrames(90, 10)
	m.VADFrames(5, 0)

	fams = scrape(t, base)
	counters := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"agorad_utterances_total", map[string]string{"mode": "listen"}, 2},
		{"agorad_utterances_total", map[string]string{"mode": "feedback"}, 1},
		{"agorad_whisper_calls_total", nil, 3},
		{"agorad_reconnects_total", nil, 2},
		{"agorad_refused_total", map[string]string{"kind": "listen"}, 1},
		{"agorad_refused_total", map[string]string{"kind": "outbox"}, 0},
		{"agorad_vad_frames_total", map[string]string{"path": "gated"}, 95},
		{"agorad_vad_frames_total", map[string]string{"path": "vad"}, 10},
	}
	for _, c := range counters {
		if got := value(t, fams, c.name, c.labels).Counter.GetValue(); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	gauges := []struct {
		name string
		want float64
	}{
		{"agorad_listen_buffer_items", 7}, {"agorad_outbox_items", 3}, {"agorad_audio_journal_items", 1}, {"agorad_online", 1},
		{"agorad_store_sync_failures", 4}, {"agorad_store_sync_failing", 1},
	}
	for _, g := range gauges {
		if got := value(t, fams, g.name, nil).Gauge.GetValue(); got != g.want {
			t.Errorf("%s = %v, want %v", g.name, got, g.want)
		}
	}
	h := value(t, fams, "agorad_transcription_seconds", nil).Histogram
	if h.GetSampleCount() != 2 || h.GetSampleSum() != 3.5 {
		t.Errorf("transcription_seconds count %d sum %v", h.GetSampleCount(), h.GetSampleSum())
	}
	r := value(t, fams, "agorad_transcription_realtime_factor", nil).Histogram
	if r.GetSampleCount() != 2 || r.GetSampleSum() != 1.75 {
		t.Errorf("realtime factor count %d sum %v", r.GetSampleCount(), r.GetSampleSum())
	}
	if value(t, fams, "agorad_build_info", map[string]string{"version": "1.2.3"}).Gauge.GetValue() != 1 {
		t.Error("build_info")
	}
	if _, ok := fams["go_goroutines"]; !ok {
		t.Error("Go collector missing")
	}
	m.SetOnline(false)
	if got := value(t, scrape(t, base), "agorad_online", nil).Gauge.GetValue(); got != 0 {
		t.Errorf("online after SetOnline(false) = %v", got)
	}
}

func TestHealthz(t *testing.T) {
	var healthy atomic.Bool
	healthy.Store(true)
	m := New("x")
	base := start(t, m, func() Health {
		if healthy.Load() {
			return Health{OK: true, Online: false, Mode: "listen"}
		}
		return Health{OK: false, Online: false, Mode: "feedback", Reason: "capture stalled"}
	})
	tests := []struct {
		healthy bool
		code    int
		want    Health
	}{
		{true, 200, Health{OK: true, Mode: "listen"}},
		{false, 503, Health{OK: false, Mode: "feedback", Reason: "capture stalled"}},
	}
	for _, tc := range tests {
		healthy.Store(tc.healthy)
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("healthy=%v: status %d, want %d", tc.healthy, resp.StatusCode, tc.code)
		}
		var got Health
		if err := json.Unmarshal(body, &got); err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("healthy=%v: body %s (%v), want %+v", tc.healthy, body, err, tc.want)
		}
	}
	resp, err := http.Post(base+"/metrics", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /metrics: %d", resp.StatusCode)
	}
}

func TestListenRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:9464", ":9464", "example.com:80", "nonsense"} {
		if ln, err := Listen(addr); err == nil {
			ln.Close()
			t.Errorf("Listen(%q) accepted", addr)
		} else if !strings.Contains(err.Error(), addr) {
			t.Errorf("Listen(%q) error does not name the address: %v", addr, err)
		}
	}
	ln, err := Listen("[::1]:0")
	if err == nil {
		ln.Close()
	} else if !strings.Contains(err.Error(), "listen for metrics") {
		t.Errorf("[::1]: %v", err)
	}
}

// Issue 9, item 7: a metrics port already taken stopped the whole daemon.
// ListenAndServe reports it (Problem, agorad_listener_errors_total), keeps
// retrying and serves once the port is free.
func TestListenAndServePortTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := taken.Addr().String()
	m := New("test")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.ListenAndServe(ctx, addr, nil, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	deadline := time.Now().Add(5 * time.Second)
	for m.Problem() == "" {
		if time.Now().After(deadline) {
			t.Fatal("no problem reported for a taken port")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(m.Problem(), addr) {
		t.Errorf("problem %q does not name %s", m.Problem(), addr)
	}
	taken.Close()
	deadline = time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(b), `agorad_listener_errors_total{listener="metrics"} `) || strings.Contains(string(b), `agorad_listener_errors_total{listener="metrics"} 0`) {
				t.Errorf("listener error not counted:\n%s", b)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never served after the port was freed: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if p := m.Problem(); p != "" {
		t.Errorf("problem %q still reported while serving", p)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ListenAndServe: %v", err)
	}
}
