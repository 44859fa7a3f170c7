// Command agorad is the voice-driven edge daemon for inspection hardware.
// Its subcommands run the daemon (run), transcribe WAV files through the
// same pipeline (transcribe), list audio devices (devices) and download
// models (model fetch) or import them (model import).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/agora/agorad/audio"
)

// version is set at build time: -ldflags "-X main.version=1.2.3".
var version = "dev"

// Exit codes.
const (
	exitOK        = 0
	exitFailed    = 1 // some inputs failed; the daemon could not start or failed while running
	exitUsage     = 2 // usage or configuration error
	exitUndrained = 3 // run with a file input: processed, but the outbox was not drained in time (entries stay stored)
	exitStore     = 4 // the store was refused: damaged, rolled back, replaced, or its encryption key wrong or missing
	// exitStoreFailed: the store could not be closed cleanly on the way
	// out (its directory gone, read-only, too full for Badger's memtable
	// flush, or its close overran the stop limit); what it accepted is in
	// its tables and write-ahead log, as the log line says.
	exitStoreFailed = 5
	// exitStorageReplaced: the state directory was replaced while running
	// (another file system, or the card again, mounted in its place); a
	// restart opens what is there now through the open-time checks.
	exitStorageReplaced = 6
)

func main() {
	if err := audio.ReexecForPortAudio(); err != nil {
		fmt.Fprintf(os.Stderr, "agorad: %v (going on: a PortAudio stream open may abort the process)\n", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usageText = `usage: agorad <command> [flags] [args]

commands:
  run                      run the daemon (agorad run -h for flags)
  transcribe FILE...       transcribe WAV files: one JSON object per utterance
  devices                  list audio input devices
  model fetch NAME         download a model from the catalog into ./models
  model import DIR         convert a CTranslate2 (faster-whisper) Whisper model to ggml
  model list               list the models in the catalog
  doctor [-c FILE] [--json] [--ptt-wait D] [-v]  check config, secrets, clock, compute, models, spotter, broker, disk, store, groups, microphone, speaker, key
  store check|salvage|rekey  verify, rescue or re-key the store (agorad store for flags)
  completion bash          print a bash completion script
  version                  print the version
  help                     print this help
`

// dispatch runs the subcommand named by args[0] and returns the exit code.
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "run":
		return runDaemon(ctx, rest, stdout, stderr)
	case "transcribe":
		return cmdTranscribe(ctx, rest, stdout, stderr, realPipeline{})
	case "doctor":
		return cmdDoctor(ctx, rest, stdout, stderr, realDoctorEnv())
	case "devices":
		return cmdDevices(rest, stdout, stderr, listDevices)
	case "model":
		return cmdModel(ctx, rest, stdout, stderr)
	case "store":
		return cmdStore(ctx, rest, stdout, stderr)
	case "completion":
		return cmdCompletion(ctx, rest, stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintf(stdout, "agorad %s%s\n", version, revision())
		return exitOK
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usageText)
		return exitOK
	default:
		fmt.Fprintf(stderr, "agorad: unknown command %q\n%s", cmd, usageText)
		return exitUsage
	}
}

// revision is the VCS commit the binary was built from, when Go recorded it.
func revision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return ""
	}
	return " (" + rev + dirty + ")"
}
