// Package configs holds agorad's YAML configuration: the defaults (the
// embedded agorad.yaml), strict loading, environment overrides for secrets,
// validation that names the bad field, redaction for logs, and the
// difference between two configurations (which fields a SIGHUP changed; the
// daemon decides which of those it can apply without a restart).
package configs

import (
	_ "embed"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/wake"
)

// DefaultYAML is the shipped configuration file: every field, commented.
// Default() is parsed from it, so the documentation and the defaults cannot
// drift apart.
//
//go:embed agorad.yaml
var DefaultYAML []byte

// Config is the whole daemon configuration. Field paths in errors use the
// yaml names ("mqtt.tls.ca_file").
type Config struct {
	DeviceID   string      `yaml:"device_id"`
	StateDir   string      `yaml:"state_dir"`
	Mode       buffer.Mode `yaml:"mode"`
	Input      Input       `yaml:"input"`
	Models     Models      `yaml:"models"`
	Transcribe Transcribe  `yaml:"transcribe"`
	Segment    Segment     `yaml:"segment"`
	Wearer     Wearer      `yaml:"wearer"`
	Wake       Wake        `yaml:"wake"`
	Storage    Storage     `yaml:"storage"`
	MQTT       MQTT        `yaml:"mqtt"`
	Sounds     Sounds      `yaml:"sounds"`
	Replies    Replies     `yaml:"replies"`
	Control    Control     `yaml:"control"`
	Metrics    Metrics     `yaml:"metrics"`
	Log        Log         `yaml:"log"`
}

// Input says where audio comes from and what starts capture.
type Input struct {
	Source    string `yaml:"source"` // "default", a device name, a device index, a .wav path, or "none"
	PTT       PTT    `yaml:"ptt"`
	HandsFree bool   `yaml:"hands_free"`
}

// PTT is push-to-talk over a Linux evdev key.
type PTT struct {
	Enabled     bool   `yaml:"enabled"`
	EvdevDevice string `yaml:"evdev_device"`
	KeyCode     int    `yaml:"key_code"`
	// MaxUtterance cuts a long press into pieces; StuckAfter warns about a
	// press that lasts too long (0: never).
	MaxUtterance Duration `yaml:"max_utterance"`
	StuckAfter   Duration `yaml:"stuck_after"`
}

// Models names the whisper and VAD models (a catalog name or a file path).
type Models struct {
	Whisper string `yaml:"whisper"`
	VAD     string `yaml:"vad"`
	Dir     string `yaml:"dir"`
}

// Transcribe tunes whisper.
type Transcribe struct {
	Language string `yaml:"language"`
	// Languages are the wearer's languages language auto chooses among,
	// the first assumed until another is heard; LanguageSwitch is the
	// probability whisper must give another of them to take over from the
	// one heard last (transcribe.Options.Languages, SwitchP).
	Languages      []string `yaml:"languages"`
	LanguageSwitch float64  `yaml:"language_switch"`
	Threads        int      `yaml:"threads"`
	InitialPrompt  string   `yaml:"initial_prompt"`
	Contexts       []string `yaml:"contexts"`
	// Vocabulary maps a language to a list of terms appended to the prompt
	// when an utterance is decoded in it: a built-in list's name or a file
	// (VocabularyTerms).
	Vocabulary map[string]string `yaml:"vocabulary"`
	// Window is whisper's encoder window per utterance: full or steps
	// (transcribe.Window).
	Window string `yaml:"window"`
}

// Segment tunes utterance segmentation.
type Segment struct {
	EnergyGateDBFS float64  `yaml:"energy_gate_dbfs"`
	VADOnset       float64  `yaml:"vad_onset"`
	VADOffset      float64  `yaml:"vad_offset"`
	MinSpeech      Duration `yaml:"min_speech"`
	Hangover       Duration `yaml:"hangover"`
	PreRoll        Duration `yaml:"pre_roll"`
	PostPad        Duration `yaml:"post_pad"`
	MaxUtterance   Duration `yaml:"max_utterance"`
	SpeculateAfter Duration `yaml:"speculate_after"`
	CompleteWait   Duration `yaml:"complete_wait"`
	CompleteRule   string   `yaml:"complete_rule"`
}

// Wearer is the level gate that keeps the headset wearer's speech and
// drops quieter speech of the people around (audio/wearer).
type Wearer struct {
	Enabled      bool     `yaml:"enabled"`
	ExpectedDBFS float64  `yaml:"expected_dbfs"`
	BelowDB      float64  `yaml:"below_db"`
	FrameBelowDB float64  `yaml:"frame_below_db"`
	WordBelowDB  float64  `yaml:"word_below_db"`
	MinSNRDB     float64  `yaml:"min_snr_db"`
	MaxDriftDB   float64  `yaml:"max_drift_db"`
	Lookahead    Duration `yaml:"lookahead"`
	Hold         Duration `yaml:"hold"`
}

// Wake lists the wake words; empty lists mean the wake package's built-in ones.
type Wake struct {
	Words       []string `yaml:"words"`
	ListenWords []string `yaml:"listen_words"`
	Reject      []string `yaml:"reject"`
	// Bias pushes whisper toward writing the wake word (wake.Config.Bias);
	// unset means wake.DefaultBias, 0 turns it off.
	Bias *float64 `yaml:"bias"`
	// Spotter is the keyword spotter that hears the name in the audio
	// (wake/kws): "auto" (the default: used when its front end is in the
	// models directory, else whisper's text alone, with a warning), "on"
	// (missing front end: the daemon does not start) or "off".
	Spotter string `yaml:"spotter"`
	// SpotterThreshold is the score from which the spotter counts the name
	// as said; 0 means the trained head's own.
	SpotterThreshold float64 `yaml:"spotter_threshold"`
	// SpotterHead is a directory of trained heads (make kws-head: head.json,
	// and late.json, gate.json when there) used instead of the built-in
	// ones for "Agora"; "" means the built-in ones. The name it was trained
	// for belongs in Words, so that whisper's text and the rules know it.
	SpotterHead string `yaml:"spotter_head"`
	// Fuse and FuseLike: a spotter score from Fuse up (below its
	// threshold) wakes where whisper wrote something that sounds like the
	// name (wake.Config.Fuse, FuseLike); unset means the wake package's
	// defaults, fuse 0 turns it off.
	Fuse     *float64 `yaml:"fuse"`
	FuseLike *float64 `yaml:"fuse_like"`
}

// SpotterMode is Spotter with its default.
func (w Wake) SpotterMode() string {
	if w.Spotter == "" {
		return "auto"
	}
	return w.Spotter
}

// Rules returns the wake configuration to build wake rules from: each empty
// list is replaced by the wake package's built-in list.
func (w Wake) Rules() wake.Config {
	cfg := wake.DefaultConfig()
	if len(w.Words) > 0 {
		cfg.Words = slices.Clone(w.Words)
	}
	if len(w.ListenWords) > 0 {
		cfg.ListenWords = slices.Clone(w.ListenWords)
	}
	if len(w.Reject) > 0 {
		cfg.Reject = slices.Clone(w.Reject)
	}
	if w.Bias != nil {
		cfg.Bias = *w.Bias
	}
	if w.Fuse != nil {
		cfg.Fuse = *w.Fuse
	}
	if w.FuseLike != nil {
		cfg.FuseLike = *w.FuseLike
	}
	return cfg
}

// Storage caps and durability of the Badger store.
type Storage struct {
	MaxBytes       int64  `yaml:"max_bytes"`
	MaxItems       int    `yaml:"max_items"`
	Sync           string `yaml:"sync"`            // always | interval | none
	AudioRetention string `yaml:"audio_retention"` // drop | keep
	// EncryptionKeyFile turns on encryption at rest (AES, the whole store):
	// 16/24/32 raw bytes or 32/48/64 hex digits; $VARIABLES are expanded,
	// e.g. ${CREDENTIALS_DIRECTORY}/agorad-store-key (systemd credentials).
	EncryptionKeyFile string `yaml:"encryption_key_file"`
	// SpoolBytes bounds the memory that holds what the store could not
	// keep while it had failed (docs/storage.md); 0: no spool (refused).
	SpoolBytes int64 `yaml:"spool_bytes"`
}

// MQTT is the uplink to the backend.
type MQTT struct {
	Broker           string   `yaml:"broker"`
	ClientID         string   `yaml:"client_id"`
	Username         string   `yaml:"username"`
	Password         string   `yaml:"password"`
	PasswordFile     string   `yaml:"password_file"`
	TLS              TLS      `yaml:"tls"`
	Keepalive        Duration `yaml:"keepalive"`
	ReconnectMin     Duration `yaml:"reconnect_min"`
	ReconnectMax     Duration `yaml:"reconnect_max"`
	BatchAckRequired bool     `yaml:"batch_ack_required"`
	Delivery         string   `yaml:"delivery"` // broker | backend
	// Engine is the broker software behind Broker: mosquitto or nats. It
	// only narrows device_id to what that engine carries (EngineDeviceID).
	Engine     string   `yaml:"engine"`
	AckTimeout Duration `yaml:"ack_timeout"` // backend acks: re-publish after
	StuckAfter Duration `yaml:"stuck_after"` // outbox head waiting this long online: warn
	// OfflineUnhealthyAfter: /healthz is not ok once the link has been down
	// this long with outbox entries waiting (0: never).
	OfflineUnhealthyAfter Duration `yaml:"offline_unhealthy_after"`
}

// TLS files for the broker connection.
type TLS struct {
	CAFile   string `yaml:"ca_file"`
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// Sounds are the earcons.
type Sounds struct {
	Enabled bool    `yaml:"enabled"`
	Volume  float64 `yaml:"volume"`
	Device  string  `yaml:"device"`
}

// Replies are the backend's answers, spoken on the device (issue 7).
type Replies struct {
	Enabled    bool     `yaml:"enabled"`
	Engine     string   `yaml:"engine"`
	Voices     Voices   `yaml:"voices"`
	Rate       int      `yaml:"rate"`
	Volume     float64  `yaml:"volume"`
	Language   string   `yaml:"language"`
	MaxAge     Duration `yaml:"max_age"`
	MaxChars   int      `yaml:"max_chars"`
	PartWait   Duration `yaml:"part_wait"`
	HalfDuplex bool     `yaml:"half_duplex"`
	Tail       Duration `yaml:"tail"`
	// ThinkingAfter: the "thinking" earcon plays once when a question was
	// published this long ago and its answer has not come (feedback mode).
	ThinkingAfter Duration `yaml:"thinking_after"`
}

// Voices name the synthesis voice per language.
type Voices struct {
	NL string `yaml:"nl"`
	EN string `yaml:"en"`
}

// Control is the agoractl socket.
type Control struct {
	Socket string `yaml:"socket"`
}

// Metrics is the Prometheus endpoint.
type Metrics struct {
	Listen string `yaml:"listen"`
}

// Log configures log/slog.
type Log struct {
	Level  string `yaml:"level"`  // debug | info | warn | error
	Format string `yaml:"format"` // text | json
}

// Duration is a time.Duration written as a Go duration string ("500ms") in
// YAML; bare numbers are refused because their unit would be a guess.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML parses a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseDuration(n)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

func parseDuration(n *yaml.Node) (Duration, error) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		return 0, fmt.Errorf("%q is not a duration (write it with a unit: 500ms, 30s, 2m)", n.Value)
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (write it with a unit: 500ms, 30s, 2m)", n.Value)
	}
	return Duration(v), nil
}

// MarshalYAML writes the duration string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// MarshalText writes the duration string (JSON output).
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// ModelsDir is where named models are looked up and fetched to: models.dir,
// or <state_dir>/models when empty.
func (c *Config) ModelsDir() string {
	if c.Models.Dir != "" {
		return c.Models.Dir
	}
	return filepath.Join(c.StateDir, "models")
}
