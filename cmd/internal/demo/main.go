// Command demo is make demo: the whole AGORA chain on one machine, a
// scripted spoken inspection round through a microphone fed at real time,
// what happened at each step with its timing, the answer in a WAV file.
// Everything it starts it stops, also on Ctrl-C or failure.
//
//	go run ./cmd/internal/demo                      the scripted round (espeak-ng speech)
//	go run ./cmd/internal/demo -input my.wav        a recording instead, at real time
//	go run ./cmd/internal/demo -script nl -model models/ggml-base-q8_0.bin -lang auto
//	                                                the Dutch round on the multilingual model
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/cmd/internal/chain"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// options are the command line.
type options struct {
	root, bin, model, input, answer, dir, lang string
	keep                                       bool
	lines                                      []chain.Line
	voice                                      []string
}

func parse(args []string, out io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.root, "root", ".", "the repository (refgraph/, models/)")
	fs.StringVar(&o.bin, "bin", "build/bin", "where make build put agorad, agoractl and agora-bridge")
	fs.StringVar(&o.model, "model", "models/ggml-tiny.en-q8_0.bin", "whisper model (make models imports it)")
	fs.StringVar(&o.input, "input", "", "a WAV recording to play into the microphone instead of the scripted round")
	fs.StringVar(&o.answer, "answer", "build/demo/answer.wav", "where the spoken answers are written")
	fs.StringVar(&o.dir, "dir", "", "scratch directory (default: a new temporary one, removed at the end)")
	fs.BoolVar(&o.keep, "keep", false, "keep the scratch directory (logs, state) after the end")
	fs.StringVar(&o.lang, "lang", "en", "agorad's transcribe.language: en, nl or auto (nl and auto need a multilingual model such as models/ggml-base-q8_0.bin)")
	script := fs.String("script", "en", "the scripted round: en (espeak-ng en-us) or nl (espeak-ng nl)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (a recording is -input FILE.wav)", fs.Arg(0))
	}
	switch *script {
	case "en":
		o.lines, o.voice = chain.Inspection, chain.Voice
	case "nl":
		o.lines, o.voice = chain.Inspectie, chain.VoiceNL
	default:
		return o, fmt.Errorf("-script %q: want en or nl", *script)
	}
	switch o.lang {
	case "en", "nl", "auto":
	default:
		return o, fmt.Errorf("-lang %q: want en, nl or auto", o.lang)
	}
	return o, nil
}

// vadModel is the Silero model: the one make run fetches, or the tests'.
func vadModel(root string) (string, error) {
	for _, p := range []string{"models/ggml-silero-v6.2.0.bin", "../shared/models/for-tests-silero-v6.2.0-ggml.bin"} {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			return filepath.Abs(filepath.Join(root, p))
		}
	}
	return "", errors.New("no Silero VAD model: run ./build/bin/agorad model fetch silero-v6.2.0 --dir models")
}

func run(ctx context.Context, args []string, out io.Writer) (err error) {
	o, err := parse(args, out)
	if err != nil {
		return err
	}
	root, err := filepath.Abs(o.root)
	if err != nil {
		return err
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(root, p)
	}
	model, bin, answer := abs(o.model), abs(o.bin), abs(o.answer)
	if _, err := os.Stat(model); err != nil {
		return fmt.Errorf("whisper model: %w (make models imports it)", err)
	}
	vad, err := vadModel(root)
	if err != nil {
		return err
	}
	var recording []float32
	if o.input != "" {
		if recording, err = audio.ReadFile(o.input); err != nil {
			return fmt.Errorf("input: %w", err)
		}
	}
	dir := o.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "agora-demo-"); err != nil {
			return err
		}
		if !o.keep {
			defer os.RemoveAll(dir)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	start := time.Now()
	print := func(s string) { fmt.Fprintf(out, "%6.1fs  %s\n", time.Since(start).Seconds(), s) }
	printf := func(format string, a ...any) { print(fmt.Sprintf(format, a...)) }

	spotter := ""
	if _, err := os.Stat(filepath.Join(root, "models", "kws")); err == nil {
		spotter = filepath.Join(root, "models")
	}
	printf("starting the chain in %s", dir)
	c, err := chain.Start(ctx, chain.Options{Root: root, BinDir: bin, Dir: dir, Whisper: model, VAD: vad,
		ModelsDir: spotter, Progress: printf, Language: o.lang, Voice: o.voice})
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			fmt.Fprintf(out, "\nthe chain's logs (%s):\n%s\n", dir, c.Logs())
		}
		print("stopping agorad, agora-bridge, the reference graph and mosquitto")
		c.Stop()
		print("stopped")
	}()
	nctx, stopNarrator := context.WithCancel(ctx)
	defer stopNarrator()
	nar := c.Narrate(nctx, func(s string) { print("  " + s) })
	c.OnSpoken = func(sp chain.Spoken) { nar.SpeechEnded(sp.End) } // the reference of the times printed

	if recording != nil {
		err = playRecording(ctx, c, recording, print)
	} else {
		err = playRound(ctx, c, nar, o.lines, print)
	}
	if err != nil {
		return err
	}
	st, err := c.Settle(ctx, time.Minute)
	if err != nil {
		return fmt.Errorf("the device's outbox did not empty: %w (outbox %d, unconfirmed %d)", err, st.Outbox, st.Unconfirmed)
	}
	nar.Sync(ctx)
	printf("device settled: mode %s, listen buffer %d, outbox %d, unconfirmed %d", st.Mode, st.Buffered, st.Outbox, st.Unconfirmed)
	stopNarrator()
	c.Agorad.Stop() // closes its speaker: the file plugin writes what it still holds
	played, err := c.Mic.Played()
	if err != nil {
		return err
	}
	if err := chain.WriteWAV(answer, chain.Trim(played)); err != nil {
		return err
	}
	printf("the answer as spoken: %s (%.1f s of speech; play it with: aplay %s)", answer, chain.Loud(played).Seconds(), answer)
	return nil
}

func playRound(ctx context.Context, c *chain.Chain, nar *chain.Narrator, lines []chain.Line, print func(string)) error {
	for _, l := range lines {
		print(fmt.Sprintf("say %q", l.Text))
		st, err := c.SayLine(ctx, l)
		nar.Sync(ctx)
		if err != nil {
			return err
		}
		sum := fmt.Sprintf("done in %.1f s after the end of speech", st.Done.Sub(st.End).Seconds())
		if l.Kind == chain.Question {
			sum += fmt.Sprintf(" (reply %s)", st.Outcome.Outcome)
		}
		print(sum)
	}
	return nil
}

func playRecording(ctx context.Context, c *chain.Chain, rec []float32, print func(string)) error {
	print(fmt.Sprintf("playing the recording (%.1f s) at real time", float64(len(rec))/audio.SampleRate))
	_, err := c.Play(ctx, "recording", rec)
	if err != nil {
		return err
	}
	print("recording played; waiting until the device is quiet")
	// Quiet: no new transcription, message, or speech for 15 s (longer
	// than whisper takes for one utterance on a loaded two-core machine:
	// the counter moves only when a run returns).
	var last chain.Status
	lastMsgs := 0
	quietSince := time.Now()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Since(quietSince) < 15*time.Second {
		if time.Now().After(deadline) {
			return errors.New("the device did not go quiet within 3 min of the recording's end")
		}
		st, err := c.Status(ctx)
		if err != nil {
			return err
		}
		msgs := len(c.Bus.Messages())
		if st.Transcriptions != last.Transcriptions || msgs != lastMsgs || st.Speaking != "" || st.RepliesWaiting > 0 || st.Outbox > 0 {
			quietSince = time.Now()
		}
		lastMsgs = msgs
		last = st
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}
