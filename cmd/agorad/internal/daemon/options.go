package daemon

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/configs"
)

// ErrUndrained ends a run with a file input whose utterances were all
// stored but whose outbox did not drain within Options.DrainTimeout; the
// entries stay stored for the next start.
var ErrUndrained = errors.New("outbox not drained before the drain timeout; entries stay stored")

// ConfigError is a start failure caused by the configuration (wake rules,
// MQTT options) rather than by the machine.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }

func (e *ConfigError) Unwrap() error { return e.Err }

// Options are what `agorad run` passes in after flags override the config.
type Options struct {
	Config       *configs.Config
	ConfigPath   string        // re-read on SIGHUP; "" means defaults only
	DrainTimeout time.Duration // file input: how long to wait for the outbox to drain
	Version      string
	Logger       *slog.Logger
	LevelVar     *slog.LevelVar // changed on SIGHUP when log.level changes
	Reload       <-chan struct{}

	// OpenSource, when set, replaces the configured audio input (tests
	// script the stream with it to line key presses up with samples).
	OpenSource func(ctx context.Context) (audio.Source, error)
	// Transcriber, when set, is used instead of loading the whisper model.
	Transcriber Transcriber
}
