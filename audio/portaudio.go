package audio

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/gordonklaus/portaudio"
)

// PortAudio must be initialised before use and terminated after; capture and
// playback share one process, so both go through this reference count.
var (
	paMu   sync.Mutex
	paRefs int
)

func paAcquire() error {
	paMu.Lock()
	defer paMu.Unlock()
	if paRefs == 0 {
		if err := portaudio.Initialize(); err != nil {
			return fmt.Errorf("initialise PortAudio: %w", err)
		}
	}
	paRefs++
	return nil
}

func paRelease() {
	paMu.Lock()
	defer paMu.Unlock()
	if paRefs == 0 {
		return
	}
	paRefs--
	if paRefs == 0 {
		// Terminating lets a later Initialize re-read the ALSA configuration.
		_ = portaudio.Terminate()
	}
}

// Device is an audio device as PortAudio sees it.
type Device struct {
	Index                               int
	Name                                string
	HostAPI                             string
	MaxInputChannels, MaxOutputChannels int
	DefaultSampleRate                   float64
	IsDefaultInput, IsDefaultOutput     bool
}

// Devices lists the audio devices PortAudio can open.
func Devices() ([]Device, error) {
	if err := paAcquire(); err != nil {
		return nil, err
	}
	defer paRelease()
	return listDevices()
}

// listDevices needs PortAudio initialised.
func listDevices() ([]Device, error) {
	infos, err := portaudio.Devices()
	if err != nil {
		return nil, fmt.Errorf("list audio devices: %w", err)
	}
	defIn, _ := portaudio.DefaultInputDevice()
	defOut, _ := portaudio.DefaultOutputDevice()
	out := make([]Device, 0, len(infos))
	for _, d := range infos {
		dev := Device{
			Index:             d.Index,
			Name:              d.Name,
			MaxInputChannels:  d.MaxInputChannels,
			MaxOutputChannels: d.MaxOutputChannels,
			DefaultSampleRate: d.DefaultSampleRate,
			IsDefaultInput:    defIn != nil && defIn.Index == d.Index,
			IsDefaultOutput:   defOut != nil && defOut.Index == d.Index,
		}
		if d.HostApi != nil {
			dev.HostAPI = d.HostApi.Name
		}
		out = append(out, dev)
	}
	return out, nil
}

// findDevice resolves "default" (or ""), an exact name, a unique substring
// of a name (case-insensitive), or an index, among devices that have
// input (input true) or output channels. Needs PortAudio initialised.
func findDevice(spec string, input bool) (*portaudio.DeviceInfo, error) {
	kind := "output"
	if input {
		kind = "input"
	}
	if spec == "" || spec == "default" {
		var d *portaudio.DeviceInfo
		var err error
		if input {
			d, err = portaudio.DefaultInputDevice()
		} else {
			d, err = portaudio.DefaultOutputDevice()
		}
		if err != nil {
			return nil, fmt.Errorf("find default %s device: %w (devices: %s)", kind, err, deviceNames(input))
		}
		return d, nil
	}
	infos, err := portaudio.Devices()
	if err != nil {
		return nil, fmt.Errorf("list audio devices: %w", err)
	}
	usable := func(d *portaudio.DeviceInfo) bool {
		if input {
			return d.MaxInputChannels > 0
		}
		return d.MaxOutputChannels > 0
	}
	if idx, err := strconv.Atoi(spec); err == nil {
		for _, d := range infos {
			if d.Index == idx {
				if !usable(d) {
					return nil, fmt.Errorf("audio device %d (%q) has no %s channels (%s devices: %s)", idx, d.Name, kind, kind, deviceNames(input))
				}
				return d, nil
			}
		}
		return nil, fmt.Errorf("no audio device with index %d (%s devices: %s)", idx, kind, deviceNames(input))
	}
	for _, d := range infos {
		if usable(d) && d.Name == spec {
			return d, nil
		}
	}
	var matches []*portaudio.DeviceInfo
	for _, d := range infos {
		if usable(d) && strings.Contains(strings.ToLower(d.Name), strings.ToLower(spec)) {
			matches = append(matches, d)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return nil, fmt.Errorf("no %s audio device named %q (%s devices: %s)", kind, spec, kind, deviceNames(input))
	default:
		names := make([]string, len(matches))
		for i, d := range matches {
			names[i] = fmt.Sprintf("%d %q", d.Index, d.Name)
		}
		return nil, fmt.Errorf("audio device %q is ambiguous: matches %s; use the exact name or the index", spec, strings.Join(names, ", "))
	}
}

// deviceNames lists the input or output devices for error messages.
func deviceNames(input bool) string {
	infos, err := portaudio.Devices()
	if err != nil {
		return "unavailable: " + err.Error()
	}
	var names []string
	for _, d := range infos {
		if (input && d.MaxInputChannels > 0) || (!input && d.MaxOutputChannels > 0) {
			names = append(names, fmt.Sprintf("%d %q", d.Index, d.Name))
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
