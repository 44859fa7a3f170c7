package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/testaudio"
)

func TestDevicesFake(t *testing.T) {
	devs := []audio.Device{
		{Index: 0, Name: "HDA Intel: ALC892 Analog", HostAPI: "ALSA", MaxInputChannels: 2, MaxOutputChannels: 2, DefaultSampleRate: 44100},
		{Index: 1, Name: "HDMI 0", HostAPI: "ALSA", MaxOutputChannels: 8, DefaultSampleRate: 48000},
		{Index: 2, Name: "Jabra headset", HostAPI: "ALSA", MaxInputChannels: 1, DefaultSampleRate: 16000, IsDefaultInput: true},
	}
	list := func() ([]audio.Device, error) { return devs, nil }

	var out, errOut bytes.Buffer
	if code := cmdDevices(nil, &out, &errOut, list); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "INDEX") {
		t.Fatalf("table = %q, want a header and the 2 input devices", out.String())
	}
	if strings.Contains(out.String(), "HDMI") {
		t.Errorf("output-only device listed: %q", out.String())
	}
	if !strings.Contains(lines[2], "Jabra headset") || !strings.HasSuffix(lines[2], "*") || strings.HasSuffix(lines[1], "*") {
		t.Errorf("default marker wrong: %q", lines[1:])
	}

	out.Reset()
	if code := cmdDevices([]string{"--json"}, &out, &errOut, list); code != exitOK {
		t.Fatalf("--json exit %d", code)
	}
	var got []deviceJSON
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("--json output %q: %v", out.String(), err)
	}
	want := []deviceJSON{{0, "HDA Intel: ALC892 Analog", "ALSA", 2, 44100, false}, {2, "Jabra headset", "ALSA", 1, 16000, true}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("--json = %+v, want %+v", got, want)
	}

	errOut.Reset()
	failing := func() ([]audio.Device, error) { return nil, errors.New("portaudio: init failed") }
	if code := cmdDevices(nil, &out, &errOut, failing); code != exitFailed || !strings.Contains(errOut.String(), "portaudio: init failed") {
		t.Errorf("failing list: exit %d, stderr %q", code, errOut.String())
	}
}

// The real PortAudio, with the ALSA file-plugin microphone.
func TestDevicesVirtualMic(t *testing.T) {
	if testing.Short() {
		t.Skip("opens PortAudio")
	}
	testaudio.NewVirtualMic(t, testaudio.Silence(100))
	var out, errOut bytes.Buffer
	if code := cmdDevices([]string{"--json"}, &out, &errOut, listDevices); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var got []deviceJSON
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("output %q: %v", out.String(), err)
	}
	names := map[string]bool{}
	defaults := 0
	for _, d := range got {
		names[d.Name] = true
		if d.Channels < 1 {
			t.Errorf("input device %+v without input channels", d)
		}
		if d.Default {
			defaults++
		}
	}
	if !names["mic"] || !names["default"] || defaults != 1 {
		t.Errorf("devices %+v: want the virtual mic and default listed, exactly one default", got)
	}
}
