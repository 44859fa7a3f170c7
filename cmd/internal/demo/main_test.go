package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/cmd/internal/chain"
	"github.com/agora/agorad/sync/brokertest"
)

// TestDemoRecording is make demo's short form, with INPUT: a recording
// of a note and a question, played at real time into the whole chain. The
// demo prints each step (the note stored, the batch and the question sent,
// the answer received and spoken), writes the answer to a WAV file that
// holds it, and leaves nothing running: the broker's and the graph's ports
// refuse connections after it returns.
func TestDemoRecording(t *testing.T) {
	if testing.Short() {
		t.Skip("the whole chain with real weights at real time")
	}
	if _, err := os.Stat(brokertest.Binary); err != nil {
		t.Skipf("mosquitto not installed (%s)", brokertest.Binary)
	}
	if _, err := exec.LookPath("espeak-ng"); err != nil {
		t.Skip("espeak-ng not installed")
	}
	model := testaudio.RealModel(t, "tiny.en")
	testaudio.SpotterDir(t)
	root, _ := filepath.Abs("../../..")
	if _, err := vadModel(root); err != nil {
		t.Skip(err)
	}
	bin := t.TempDir()
	for _, p := range []string{"agorad", "agoractl", "agora-bridge"} {
		if b, err := exec.Command("go", "build", "-o", filepath.Join(bin, p), "github.com/agora/agorad/cmd/"+p).CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", p, err, b)
		}
	}
	dir := t.TempDir()
	var parts [][]float32
	for _, s := range []string{chain.Inspection[0].Text, chain.Inspection[3].Text} {
		sp, err := chain.Synth(t.Context(), dir, s, chain.Voice...)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, testaudio.Silence(500), sp, testaudio.Silence(2500))
	}
	rec := filepath.Join(dir, "round.wav")
	if err := chain.WriteWAV(rec, testaudio.Concat(parts...)); err != nil {
		t.Fatal(err)
	}
	answer := filepath.Join(dir, "answer.wav")
	var out bytes.Buffer
	err := run(t.Context(), []string{"-root", root, "-bin", bin, "-model", model, "-input", rec, "-answer", answer,
		"-dir", filepath.Join(dir, "chain")}, &out)
	t.Logf("demo output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"note stored     listen buffer 1", "mode            listen -> feedback", "notes: " + chain.Inspection[0].Text,
		"sent question   \"what should I write in the report?\"", "reply received", "reply spoken", "outbox 0, unconfirmed 0", "stopped"} {
		if !strings.Contains(text, want) {
			t.Errorf("the demo did not print %q", want)
		}
	}
	played, err := audio.ReadFile(answer)
	if err != nil {
		t.Fatal(err)
	}
	if l := chain.Loud(played); l < time.Second {
		t.Errorf("%s holds %v of loud audio, want the spoken answer (TestSpokenConversation checks its length)", answer, l)
	}
	// Everything it started is gone.
	for _, re := range []string{`mosquitto +tcp://(127\.0\.0\.1:\d+)`, `reference graph +http://(127\.0\.0\.1:\d+)/`} {
		m := regexp.MustCompile(re).FindStringSubmatch(text)
		if m == nil {
			t.Errorf("no address for %s in the output", re)
			continue
		}
		if c, err := net.DialTimeout("tcp", m[1], time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after the demo returned", m[1])
		}
	}
}

// TestParseScript: -script picks the round and its voice, -lang is passed
// through, and a value the demo cannot run is refused naming the flag.
func TestParseScript(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		wantFirst string
		wantVoice string
		wantLang  string
		wantErr   string
	}{
		{args: nil, wantFirst: chain.Inspection[0].Text, wantVoice: "en-us", wantLang: "en"},
		{args: []string{"-script", "nl", "-lang", "auto"}, wantFirst: chain.Inspectie[0].Text, wantVoice: "nl", wantLang: "auto"},
		{args: []string{"-script", "de"}, wantErr: "-script \"de\""},
		{args: []string{"-lang", "fr"}, wantErr: "-lang \"fr\""},
	} {
		o, err := parse(tc.args, &bytes.Buffer{})
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: error %v, want one naming %s", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if o.lines[0].Text != tc.wantFirst || o.voice[1] != tc.wantVoice || o.lang != tc.wantLang {
			t.Errorf("%v: first line %q, voice %v, lang %q; want %q, %s, %s", tc.args, o.lines[0].Text, o.voice, o.lang, tc.wantFirst, tc.wantVoice, tc.wantLang)
		}
	}
}
