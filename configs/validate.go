package configs

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/protocol"
	"github.com/agora/agorad/sync/uplink"
)

// Validate checks every field and returns all problems at once
// (errors.Join), each naming the field path.
func (c *Config) Validate() error {
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
	}
	oneOf := func(path, v string, allowed ...string) {
		if !slices.Contains(allowed, v) {
			bad(path, "%s is not one of %s", quote(v), strings.Join(allowed, ", "))
		}
	}
	between := func(path string, v, lo, hi float64) {
		if v < lo || v > hi {
			bad(path, "%g not in %g..%g", v, lo, hi)
		}
	}
	durBetween := func(path string, d Duration, lo, hi time.Duration) {
		if d.D() < lo || d.D() > hi {
			bad(path, "%s not in %s..%s", d, lo, hi)
		}
	}
	fileExists := func(path, p string) {
		if p == "" {
			return
		}
		st, err := os.Stat(p)
		if err != nil {
			bad(path, "%v", err)
		} else if st.IsDir() {
			bad(path, "%s is a directory", p)
		}
	}

	if c.DeviceID != "" { // empty: Load derives it
		if err := protocol.ValidateDeviceID(c.DeviceID); err != nil {
			errs = append(errs, err) // names device_id
		}
	}
	if strings.TrimSpace(c.StateDir) == "" {
		bad("state_dir", "is empty")
	}
	if _, err := buffer.ParseMode(string(c.Mode)); err != nil {
		bad("mode", "%v", err)
	}

	// input
	src := strings.TrimSpace(c.Input.Source)
	switch {
	case src == "":
		bad("input.source", `is empty (use "default", a device name or index, a .wav path, or "none")`)
	case strings.HasSuffix(strings.ToLower(src), ".wav"):
		fileExists("input.source", src)
		// A FIFO or device would block the daemon (a FIFO with no writer
		// blocks the open itself); live audio is a capture device.
		if st, err := os.Stat(src); err == nil && !st.IsDir() && !st.Mode().IsRegular() {
			bad("input.source", "%s is not a regular file (%s): a WAV input must be a file; use a capture device for live audio", src, st.Mode().Type())
		}
	}
	if k := c.Input.PTT.KeyCode; k < 1 || k > 767 {
		bad("input.ptt.key_code", "%d not in 1..767 (linux/input-event-codes.h)", k)
	}
	durBetween("input.ptt.max_utterance", c.Input.PTT.MaxUtterance, time.Second, 30*time.Second)
	durBetween("input.ptt.stuck_after", c.Input.PTT.StuckAfter, 0, 24*time.Hour)
	if !c.Input.HandsFree && !c.Input.PTT.Enabled && src != "none" {
		bad("input.hands_free", "false needs input.ptt.enabled: true (otherwise nothing is ever captured)")
	}

	// models, transcribe
	if strings.TrimSpace(c.Models.Whisper) == "" {
		bad("models.whisper", "is empty (a model name like base, or a path to a ggml .bin file)")
	}
	if strings.TrimSpace(c.Models.VAD) == "" {
		bad("models.vad", "is empty (silero-v6.2.0, or a path to a ggml .bin file)")
	}
	oneOf("transcribe.language", c.Transcribe.Language, "nl", "en", "auto")
	oneOf("transcribe.window", c.Transcribe.Window, "full", "steps")
	if n := len(c.Transcribe.Languages); n < 1 || n > maxLanguages {
		bad("transcribe.languages", "%d languages, want 1..%d (the wearer's, e.g. [nl, en])", n, maxLanguages)
	}
	for i, l := range c.Transcribe.Languages {
		if !slices.Contains(whisperLanguages, l) {
			bad(fmt.Sprintf("transcribe.languages[%d]", i), "%s is not a language whisper knows (a code such as nl, en, de, fr)", quote(l))
		} else if slices.Index(c.Transcribe.Languages, l) < i {
			bad(fmt.Sprintf("transcribe.languages[%d]", i), "%s is given twice", quote(l))
		}
	}
	between("transcribe.language_switch", c.Transcribe.LanguageSwitch, 0.5, 1)
	if _, err := c.Transcribe.VocabularyTerms(); err != nil {
		errs = append(errs, err)
	}
	if t := c.Transcribe.Threads; t < 0 || t > 256 {
		bad("transcribe.threads", "%d not in 0..256 (0: all cores)", t)
	}
	for i, s := range c.Transcribe.Contexts {
		if strings.TrimSpace(s) == "" {
			bad(fmt.Sprintf("transcribe.contexts[%d]", i), "is empty")
		}
	}

	// segment
	s := c.Segment
	between("segment.energy_gate_dbfs", s.EnergyGateDBFS, -120, 0)
	if s.VADOnset <= 0 || s.VADOnset >= 1 {
		bad("segment.vad_onset", "%g not in 0..1 (exclusive)", s.VADOnset)
	}
	if s.VADOffset <= 0 || s.VADOffset > s.VADOnset {
		bad("segment.vad_offset", "%g not in 0..vad_onset (%g)", s.VADOffset, s.VADOnset)
	}
	durBetween("segment.min_speech", s.MinSpeech, 0, 5*time.Second)
	durBetween("segment.hangover", s.Hangover, 0, 10*time.Second)
	durBetween("segment.pre_roll", s.PreRoll, 0, 5*time.Second)
	durBetween("segment.post_pad", s.PostPad, 0, 5*time.Second)
	durBetween("segment.max_utterance", s.MaxUtterance, time.Second, 30*time.Second)
	if sa := s.SpeculateAfter; sa != 0 && (sa < s.PostPad || sa >= s.Hangover) {
		bad("segment.speculate_after", "%s not in segment.post_pad (%s) .. segment.hangover (%s), or 0 (off)", sa, s.PostPad, s.Hangover)
	}
	// The early end needs the speculative text by then: speculation must
	// start no later than the short wait.
	if cw := s.CompleteWait; cw != 0 {
		switch {
		case cw < s.PostPad || cw >= s.Hangover:
			bad("segment.complete_wait", "%s not in segment.post_pad (%s) .. segment.hangover (%s), or 0 (off)", cw, s.PostPad, s.Hangover)
		case s.CompleteRule != "question" && s.CompleteRule != "sentence":
			bad("segment.complete_rule", "%q is not question or sentence", s.CompleteRule)
		case s.SpeculateAfter == 0 || s.SpeculateAfter > cw:
			bad("segment.complete_wait", "%s needs segment.speculate_after in segment.post_pad .. %s (it is %s): the turn ends early on the speculative transcript", cw, cw, s.SpeculateAfter)
		}
	}
	if s.MinSpeech.D() >= s.MaxUtterance.D() && s.MaxUtterance.D() > 0 {
		bad("segment.min_speech", "%s is not shorter than segment.max_utterance (%s)", s.MinSpeech, s.MaxUtterance)
	}

	// wearer
	wr := c.Wearer
	between("wearer.expected_dbfs", wr.ExpectedDBFS, -80, 0)
	for _, f := range []struct {
		path string
		v    float64
	}{{"wearer.below_db", wr.BelowDB}, {"wearer.frame_below_db", wr.FrameBelowDB}, {"wearer.word_below_db", wr.WordBelowDB}} {
		if f.v <= 0 || f.v > 40 {
			bad(f.path, "%g not in 0..40 (dB, more than 0)", f.v)
		}
	}
	between("wearer.min_snr_db", wr.MinSNRDB, 0, 40)
	between("wearer.max_drift_db", wr.MaxDriftDB, 0, 40)
	durBetween("wearer.lookahead", wr.Lookahead, 0, time.Second)
	durBetween("wearer.hold", wr.Hold, 0, 5*time.Second)

	// wake: the wake package's own check (its errors name wake.words[i]).
	if err := c.Wake.Rules().Validate(); err != nil {
		errs = append(errs, err)
	}
	switch c.Wake.SpotterMode() {
	case "auto", "on", "off":
	default:
		bad("wake.spotter", "%q: want auto, on or off", c.Wake.Spotter)
	}
	if t := c.Wake.SpotterThreshold; math.IsNaN(t) || t < 0 || t >= 1 {
		bad("wake.spotter_threshold", "%v: want 0 (the trained head's) or a probability below 1", t)
	}
	if d := c.Wake.SpotterHead; d != "" {
		if st, err := os.Stat(filepath.Join(d, "head.json")); err != nil || !st.Mode().IsRegular() {
			bad("wake.spotter_head", "%q: want a directory holding head.json (make kws-head)", d)
		}
	}

	// storage
	if b := c.Storage.MaxBytes; b != 0 && b < 16<<20 {
		bad("storage.max_bytes", "%d is below 16 MiB (16777216); 0 means no cap", b)
	}
	if c.Storage.MaxItems < 0 {
		bad("storage.max_items", "%d is negative; 0 means no cap", c.Storage.MaxItems)
	}
	if err := buffer.CheckSync(c.Storage.Sync); err != nil {
		bad("storage.sync", "%v", err)
	}
	if err := buffer.CheckAudioRetention(c.Storage.AudioRetention); err != nil {
		bad("storage.audio_retention", "%v", err)
	}
	if b := c.Storage.SpoolBytes; b < 0 || b > 64<<20 {
		bad("storage.spool_bytes", "%d not in 0..67108864 (64 MiB); 0 means no spool", b)
	}

	// mqtt
	m := c.MQTT
	tlsScheme := false
	if m.Broker != "" {
		var err error
		if _, tlsScheme, err = uplink.ParseBrokerURL(m.Broker); err != nil {
			bad("mqtt.broker", "%v", err)
		}
	}
	if (m.TLS.CertFile == "") != (m.TLS.KeyFile == "") {
		bad("mqtt.tls", "cert_file and key_file go together: set both or neither")
	}
	fileExists("mqtt.tls.ca_file", m.TLS.CAFile)
	fileExists("mqtt.tls.cert_file", m.TLS.CertFile)
	fileExists("mqtt.tls.key_file", m.TLS.KeyFile)
	if m.Broker != "" && !tlsScheme && (m.TLS.CAFile != "" || m.TLS.CertFile != "") {
		bad("mqtt.tls", "is set but mqtt.broker %s is not a TLS URL (use ssl:// or mqtts://)", quote(m.Broker))
	}
	durBetween("mqtt.keepalive", m.Keepalive, 5*time.Second, time.Hour)
	durBetween("mqtt.reconnect_min", m.ReconnectMin, 100*time.Millisecond, 10*time.Minute)
	// The ceiling is what a device waits at most once the broker is back:
	// hours (as allowed before) left inspectors without answers.
	durBetween("mqtt.reconnect_max", m.ReconnectMax, 100*time.Millisecond, 10*time.Minute)
	oneOf("mqtt.delivery", m.Delivery, "broker", "backend")
	oneOf("mqtt.engine", m.Engine, EngineMosquitto, EngineNATS)
	if c.DeviceID != "" {
		if err := EngineDeviceID(m.Engine, c.DeviceID); err != nil {
			errs = append(errs, err) // names device_id
		}
	}
	durBetween("mqtt.ack_timeout", m.AckTimeout, time.Second, 24*time.Hour)
	durBetween("mqtt.stuck_after", m.StuckAfter, time.Second, 7*24*time.Hour)
	durBetween("mqtt.offline_unhealthy_after", m.OfflineUnhealthyAfter, 0, 7*24*time.Hour)
	if m.ReconnectMax < m.ReconnectMin {
		bad("mqtt.reconnect_max", "%s is below mqtt.reconnect_min (%s)", m.ReconnectMax, m.ReconnectMin)
	}

	// sounds, control, metrics, log
	between("sounds.volume", c.Sounds.Volume, 0, 1)
	if c.Sounds.Enabled && strings.TrimSpace(c.Sounds.Device) == "" {
		bad("sounds.device", `is empty (use "default", a device name or index)`)
	}
	if r := c.Replies; r.Enabled {
		oneOf("replies.engine", r.Engine, "espeak-ng")
		for path, v := range map[string]string{"replies.voices.nl": r.Voices.NL, "replies.voices.en": r.Voices.EN} {
			if strings.TrimSpace(v) == "" || strings.ContainsAny(v, " \t\n") || strings.HasPrefix(v, "-") {
				bad(path, "%s is not a voice name (see espeak-ng --voices)", quote(v))
			}
		}
		if r.Rate != 0 && (r.Rate < 80 || r.Rate > 450) {
			bad("replies.rate", "%d not in 80..450 words per minute (0: the engine's default)", r.Rate)
		}
		between("replies.volume", r.Volume, 0, 1)
		oneOf("replies.language", r.Language, "nl", "en")
		durBetween("replies.max_age", r.MaxAge, time.Second, 7*24*time.Hour)
		durBetween("replies.part_wait", r.PartWait, time.Second, 10*time.Minute)
		if r.MaxChars < 20 || r.MaxChars > 8192 {
			bad("replies.max_chars", "%d not in 20..8192", r.MaxChars)
		}
		durBetween("replies.tail", r.Tail, 0, 5*time.Second)
	}
	if t := c.Replies.ThinkingAfter; t != 0 {
		durBetween("replies.thinking_after", t, 300*time.Millisecond, time.Minute)
	}
	switch sock := c.Control.Socket; {
	case sock == "":
		bad("control.socket", "is empty")
	case len(sock) > 100:
		// sun_path holds 108 bytes; Listen also needs room for a temporary name.
		bad("control.socket", "%s is longer than 100 bytes (unix socket path limit)", quote(sock))
	}
	if c.Metrics.Listen != "" {
		if err := CheckLoopback(c.Metrics.Listen); err != nil {
			bad("metrics.listen", "%v", err)
		}
	}
	oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error")
	oneOf("log.format", c.Log.Format, "text", "json")

	return errors.Join(errs...)
}

// CheckLoopback accepts host:port where host is localhost or a loopback IP:
// the metrics endpoints have no authentication.
func CheckLoopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s is not host:port: %v", addr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil || port == "" {
		return fmt.Errorf("%s: bad port %q", addr, port)
	}
	if host == "localhost" {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return fmt.Errorf("%s is not a loopback address", addr)
	}
	return nil
}
