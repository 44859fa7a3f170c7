package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/sync/brokertest"
)

// A listen batch the graph refuses (issue 27), end to end on agorad,
// mosquitto, the built agora-bridge and the reference graph, under the
// default mqtt.delivery: broker: the bridge parks it with its full content
// (deadletters --content shows the notes) and tells the device, which
// keeps the batch in its outbox (it used to delete it on the PUBACK) and
// says so in agoractl status, /metrics, /healthz's problems and agorad
// doctor; the next batch goes on and is deleted on the bridge's ack.
func TestEndToEndParkedBatchKeptOnDevice(t *testing.T) {
	g := e2eGraph(t)
	broker := brokertest.Start(t)
	br, stateDir := e2eBridge(t, broker.URL(), g.URL())
	metricsAddr := freeAddr(t)
	dev := e2eAgorad(t, broker.URL(), "inspector-park", func(c *configs.Config) {
		c.MQTT.Delivery = "broker"
		c.Metrics.Listen = metricsAddr
	})
	ctl, cfg := dev.Ctl, dev.Cfg
	type status struct {
		Outbox        int      `json:"outbox"`
		Parked        int      `json:"parked"`
		Problems      []string `json:"problems"`
		ParkedEntries []struct {
			ID     string `json:"id"`
			Reason string `json:"reason"`
		} `json:"parked_entries"`
	}
	getStatus := func() status {
		var st status
		if err := json.Unmarshal([]byte(ctl("--json", "status")), &st); err != nil {
			t.Fatal(err)
		}
		return st
	}

	// A round whose notes the graph rejects, then a good round.
	ctl("say", "Scheur in de balk bij as drie.")
	ctl("say", "[refgraph:reject] deze notitie weigert de graaf")
	ctl("mode", "feedback")
	var st status
	deadline := time.Now().Add(90 * time.Second)
	for st = getStatus(); st.Parked != 1; st = getStatus() {
		if time.Now().After(deadline) {
			t.Fatalf("device status %+v: the parked batch is not reported\nbridge log:\n%s\nagorad log:\n%s", st, tail(br.Log(), 3000), tail(dev.Log(), 3000))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if st.Outbox != 1 || len(st.ParkedEntries) != 1 || !strings.Contains(st.ParkedEntries[0].Reason, "reject") {
		t.Errorf("device status %+v: want the parked batch kept (outbox 1) with the graph's reason", st)
	}
	parkedID := st.ParkedEntries[0].ID
	if !strings.Contains(strings.Join(st.Problems, "\n"), "refused by the backend") {
		t.Errorf("status problems %q do not name the parked entry", st.Problems)
	}
	if out := ctl("status"); !strings.Contains(out, "parked:") || !strings.Contains(out, parkedID) {
		t.Errorf("agoractl status does not show the parked entry:\n%s", out)
	}
	// /metrics and /healthz on the daemon's metrics listener.
	// The gauges are refreshed every 2 s.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if body := httpGet(t, "http://"+metricsAddr+"/metrics"); strings.Contains(body, "\nagorad_parked 1\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("/metrics has no agorad_parked 1")
			break
		}
	}
	if body := httpGet(t, "http://"+metricsAddr+"/healthz"); !strings.Contains(body, "refused by the backend") {
		t.Errorf("/healthz problems do not name the parked entry: %s", body)
	}
	doc, _ := exec.Command(dev.Agorad, "doctor", "-c", dev.CfgPath).CombinedOutput()
	if !strings.Contains(string(doc), "WARN  link") || !strings.Contains(string(doc), parkedID) {
		t.Errorf("agorad doctor does not report the parked entry:\n%s", doc)
	}
	// The bridge has it whole, listed while it runs.
	out, err := exec.Command(binPath, "deadletters", "--state-dir", stateDir, "--content").CombinedOutput()
	if err != nil || !strings.Contains(string(out), parkedID) || !strings.Contains(string(out), "Scheur in de balk bij as drie") ||
		!strings.Contains(string(out), "deze notitie weigert de graaf") {
		t.Errorf("deadletters --content: %v\n%s", err, out)
	}

	// The next round goes on; its batch is deleted on the bridge's ack,
	// the parked one stays.
	ctl("mode", "listen")
	ctl("say", "Roest aan de noordgevel.")
	ctl("mode", "feedback")
	deadline = time.Now().Add(60 * time.Second)
	for {
		th, _ := g.Thread(cfg.DeviceID)
		buf, _ := json.Marshal(th["message_buffer"])
		if strings.Contains(string(buf), "Roest aan de noordgevel") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the next batch did not reach the graph:\n%s", tail(br.Log(), 3000))
		}
		time.Sleep(200 * time.Millisecond)
	}
	deadline = time.Now().Add(20 * time.Second)
	for st = getStatus(); st.Outbox != 1; st = getStatus() {
		if time.Now().After(deadline) {
			t.Fatalf("device status %+v: want only the parked batch left", st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if st.Parked != 1 || st.ParkedEntries[0].ID != parkedID {
		t.Errorf("device status %+v after the next round", st)
	}
	// The operator drops it once the bridge's copy is dealt with.
	if out := ctl("outbox", "drop", parkedID); !strings.Contains(out, "dropped") || !strings.Contains(out, parkedID) {
		t.Errorf("agoractl outbox drop: %s", out)
	}
	if st = getStatus(); st.Outbox != 0 || st.Parked != 0 {
		t.Errorf("device status %+v after the drop", st)
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Errorf("GET %s: %v", url, err)
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
