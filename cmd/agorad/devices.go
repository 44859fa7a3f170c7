package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/agora/agorad/audio"
)

func listDevices() ([]audio.Device, error) { return audio.Devices() }

// deviceJSON is one device in `agorad devices --json`.
type deviceJSON struct {
	Index      int     `json:"index"`
	Name       string  `json:"name"`
	HostAPI    string  `json:"host_api"`
	Channels   int     `json:"channels"`
	SampleRate float64 `json:"sample_rate"`
	Default    bool    `json:"default"`
}

// cmdDevices lists the input devices: what `input.device` (or --input) can name.
func cmdDevices(args []string, stdout, stderr io.Writer, list func() ([]audio.Device, error)) int {
	fs := flag.NewFlagSet("agorad devices", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print a JSON array")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: agorad devices [--json]\n\nLists audio input devices; use the index or name as the input device.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageCode(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agorad devices: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	devs, err := list()
	if err != nil {
		fmt.Fprintf(stderr, "agorad devices: %v\n", err)
		return exitFailed
	}
	inputs := []deviceJSON{}
	for _, d := range devs {
		if d.MaxInputChannels > 0 {
			inputs = append(inputs, deviceJSON{d.Index, d.Name, d.HostAPI, d.MaxInputChannels, d.DefaultSampleRate, d.IsDefaultInput})
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(inputs); err != nil {
			fmt.Fprintf(stderr, "agorad devices: %v\n", err)
			return exitFailed
		}
		return exitOK
	}
	if len(inputs) == 0 {
		fmt.Fprintln(stderr, "agorad devices: no audio input devices found")
		return exitFailed
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INDEX\tNAME\tCHANNELS\tRATE\tHOST API\tDEFAULT")
	for _, d := range inputs {
		def := ""
		if d.Default {
			def = "*"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%.0f\t%s\t%s\n", d.Index, d.Name, d.Channels, d.SampleRate, d.HostAPI, def)
	}
	if err := tw.Flush(); err != nil {
		return exitFailed
	}
	return exitOK
}

// usageCode maps a flag parse error to an exit code: -h is not an error.
func usageCode(err error) int {
	if err == flag.ErrHelp {
		return exitOK
	}
	return exitUsage
}
