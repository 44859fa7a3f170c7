package configs

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agora/agorad/sync/protocol"
	"github.com/agora/agorad/wake"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agorad.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func clearEnv(t *testing.T) {
	t.Setenv(EnvMQTTPassword, "")
	t.Setenv(EnvMQTTUsername, "")
}

func TestShippedFileLoadsValidatesAndIsTheDefault(t *testing.T) {
	clearEnv(t)
	d := Default()
	if err := d.Validate(); err != nil {
		t.Fatalf("Default() does not validate: %v", err)
	}
	// The file on disk is what is embedded (go:embed reads it at build time).
	disk, err := os.ReadFile("agorad.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(disk, DefaultYAML) {
		t.Fatal("embedded agorad.yaml differs from the file on disk")
	}
	// Parsing the shipped file over zero values gives the same as Default().
	var zero Config
	if err := decode(DefaultYAML, "agorad.yaml", &zero); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&zero, d) {
		t.Fatalf("shipped file parsed over zero values differs from Default():\n%v\nvs\n%v", &zero, d)
	}
	loaded, err := Load(writeConfig(t, string(DefaultYAML)))
	if err != nil {
		t.Fatalf("Load(shipped file): %v", err)
	}
	fromDefaults, err := Load("")
	if err != nil {
		t.Fatalf("Load(\"\"): %v", err)
	}
	if !reflect.DeepEqual(loaded, fromDefaults) {
		t.Fatalf("loading the shipped file differs from defaults only:\n%v\nvs\n%v", loaded, fromDefaults)
	}
	// Spot-check values that other packages rely on.
	if d.Control.Socket != "/run/agorad/agorad.sock" || d.Metrics.Listen != "127.0.0.1:9464" ||
		d.StateDir != "/var/lib/agorad" || d.Segment.MaxUtterance.D() != 30*time.Second {
		t.Fatalf("unexpected defaults: %+v", d)
	}
	if err := protocol.ValidateDeviceID(loaded.DeviceID); err != nil {
		t.Fatalf("device_id not derived: %q", loaded.DeviceID)
	}
	if loaded.MQTT.ClientID != "agorad-"+loaded.DeviceID {
		t.Fatalf("client_id = %q", loaded.MQTT.ClientID)
	}
}

// Every field of Config must appear (and so be documented) in the shipped file.
func TestEveryFieldIsInShippedFile(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal(DefaultYAML, &doc); err != nil {
		t.Fatal(err)
	}
	paths := Paths()
	if len(paths) < 40 {
		t.Fatalf("only %d paths: Paths() is broken", len(paths))
	}
	for _, p := range paths {
		n := doc.Content[0]
		for _, key := range strings.Split(p, ".") {
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == key {
					next = n.Content[i+1]
					if n.Content[i].HeadComment == "" && n.Content[i].LineComment == "" && key == p[strings.LastIndex(p, ".")+1:] {
						t.Errorf("%s has no comment in agorad.yaml", p)
					}
				}
			}
			if next == nil {
				t.Errorf("%s is missing from agorad.yaml", p)
				break
			}
			n = next
		}
	}
}

func TestParseErrorsNameFieldAndLine(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"unknown top", "mode: listen\nmqt:\n  broker: x\n", []string{"mqt: unknown field (line 2)"}},
		{"unknown nested", "mqtt:\n  brokr: tcp://a:1\n", []string{"mqtt.brokr: unknown field (line 2)"}},
		{"unknown deep", "mqtt:\n  tls:\n    ca: /x\n", []string{"mqtt.tls.ca: unknown field (line 3)"}},
		{"bare number duration", "segment:\n  hangover: 700\n", []string{"segment.hangover:", "700", "line 2", "with a unit"}},
		{"bad duration", "mqtt:\n  keepalive: soon\n", []string{"mqtt.keepalive:", `"soon"`}},
		{"bad bool", "sounds:\n  enabled: maybe\n", []string{"sounds.enabled:", `"maybe"`, "boolean"}},
		{"bad int", "storage:\n  max_items: lots\n", []string{"storage.max_items:", "integer", "line 2"}},
		{"bad float", "sounds:\n  volume: loud\n", []string{"sounds.volume:", "number"}},
		{"mapping expected", "mqtt: tcp://x\n", []string{"mqtt: expected a mapping"}},
		{"list expected", "wake:\n  words: agora\n", []string{"wake.words: expected a list"}},
		{"two at once", "foo: 1\nbar: 2\n", []string{"foo: unknown field (line 1)", "bar: unknown field (line 2)"}},
		{"syntax", "mqtt: [\n", []string{"parse"}},
		{"scalar document", "hello\n", []string{"config: expected a mapping"}},
		{"duplicate key", "mode: listen\nmode: feedback\n", []string{"already defined"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeConfig(t, tc.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestEmptyAndCommentOnlyFiles(t *testing.T) {
	clearEnv(t)
	want, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"", "# nothing set\n", "---\n"} {
		c, err := Load(writeConfig(t, body))
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		if !reflect.DeepEqual(c, want) {
			t.Fatalf("%q: differs from defaults", body)
		}
	}
}

func TestPartialFileKeepsDefaults(t *testing.T) {
	clearEnv(t)
	c, err := Load(writeConfig(t, "mode: feedback\nsounds:\n  volume: 0.25\n"))
	if err != nil {
		t.Fatal(err)
	}
	d := Default()
	if c.Mode != "feedback" || c.Sounds.Volume != 0.25 {
		t.Fatalf("values not applied: %+v", c)
	}
	if c.Sounds.Enabled != d.Sounds.Enabled || c.Sounds.Device != d.Sounds.Device || c.MQTT.Broker != d.MQTT.Broker {
		t.Fatalf("defaults lost: %+v", c)
	}
}

func TestValidationNamesField(t *testing.T) {
	wav := filepath.Join(t.TempDir(), "in.wav")
	if err := os.WriteFile(wav, []byte("RIFF"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		mod  func(c *Config)
		want string // "" means valid
	}{
		{"default", func(c *Config) {}, ""},
		{"broker scheme", func(c *Config) { c.MQTT.Broker = "foo" }, `mqtt.broker: "foo" is not a URL scheme://host:port`},
		{"broker websocket", func(c *Config) { c.MQTT.Broker = "wss://b.example:443" }, `mqtt.broker: "wss://b.example:443": scheme "wss" is not one of`},
		{"broker ok tcps", func(c *Config) { c.MQTT.Broker = "tcps://b.example:8883" }, ""},
		{"broker http", func(c *Config) { c.MQTT.Broker = "http://x:1" }, "mqtt.broker:"},
		{"broker ok ssl", func(c *Config) { c.MQTT.Broker = "ssl://b.example:8883" }, ""},
		{"broker empty disables", func(c *Config) { c.MQTT.Broker = "" }, ""},
		{"volume", func(c *Config) { c.Sounds.Volume = 1.5 }, "sounds.volume: 1.5 not in 0..1"},
		{"spool negative", func(c *Config) { c.Storage.SpoolBytes = -1 }, "storage.spool_bytes: -1 not in 0..67108864"},
		{"spool too big", func(c *Config) { c.Storage.SpoolBytes = 1 << 30 }, "storage.spool_bytes: 1073741824 not in"},
		{"spool off", func(c *Config) { c.Storage.SpoolBytes = 0 }, ""},
		{"replies engine", func(c *Config) { c.Replies.Engine = "festival" }, `replies.engine: "festival" is not one of espeak-ng`},
		{"replies voice option", func(c *Config) { c.Replies.Voices.NL = "--help" }, "replies.voices.nl:"},
		{"replies language", func(c *Config) { c.Replies.Language = "de" }, "replies.language:"},
		{"replies max_age", func(c *Config) { c.Replies.MaxAge = 0 }, "replies.max_age:"},
		{"replies rate", func(c *Config) { c.Replies.Rate = 5 }, "replies.rate:"},
		{"device_id with dot on mosquitto", func(c *Config) { c.DeviceID = "site.3" }, ""},
		{"device_id with dot on nats", func(c *Config) { c.DeviceID = "site.3"; c.MQTT.Engine = EngineNATS },
			`device_id: "site.3" contains '.', which mqtt.engine nats cannot carry`},
		{"device_id without dot on nats", func(c *Config) { c.DeviceID = "site-3"; c.MQTT.Engine = EngineNATS }, ""},
		{"unknown engine", func(c *Config) { c.MQTT.Engine = "emqx" }, `mqtt.engine: "emqx" is not one of mosquitto, nats`},
		{"replies off skips checks", func(c *Config) { c.Replies.Enabled = false; c.Replies.Engine = "x" }, ""},
		{"metrics public", func(c *Config) { c.Metrics.Listen = "0.0.0.0:9464" }, "metrics.listen: 0.0.0.0:9464 is not a loopback address"},
		{"metrics v6 loopback", func(c *Config) { c.Metrics.Listen = "[::1]:9464" }, ""},
		{"metrics localhost", func(c *Config) { c.Metrics.Listen = "localhost:0" }, ""},
		{"metrics no port", func(c *Config) { c.Metrics.Listen = "127.0.0.1" }, "metrics.listen:"},
		{"metrics disabled", func(c *Config) { c.Metrics.Listen = "" }, ""},
		{"mode", func(c *Config) { c.Mode = "talk" }, `mode: "talk" is not one of listen, feedback`},
		{"device id slash", func(c *Config) { c.DeviceID = "a/b" }, "device_id:"},
		{"device id wildcard", func(c *Config) { c.DeviceID = "a+" }, "device_id:"},
		{"language", func(c *Config) { c.Transcribe.Language = "de" }, "transcribe.language:"},
		{"threads", func(c *Config) { c.Transcribe.Threads = -1 }, "transcribe.threads:"},
		{"languages none", func(c *Config) { c.Transcribe.Languages = nil }, "transcribe.languages: 0 languages"},
		{"languages unknown", func(c *Config) { c.Transcribe.Languages = []string{"nl", "vlaams"} }, `transcribe.languages[1]: "vlaams" is not a language whisper knows`},
		{"languages twice", func(c *Config) { c.Transcribe.Languages = []string{"nl", "en", "nl"} }, `transcribe.languages[2]: "nl" is given twice`},
		{"languages dutch and german", func(c *Config) { c.Transcribe.Languages = []string{"nl", "de"} }, ""},
		{"language switch low", func(c *Config) { c.Transcribe.LanguageSwitch = 0.4 }, "transcribe.language_switch: 0.4 not in 0.5..1"},
		{"language switch off", func(c *Config) { c.Transcribe.LanguageSwitch = 0.5 }, ""},
		{"window", func(c *Config) { c.Transcribe.Window = "10s" }, "transcribe.window:"},
		{"window empty", func(c *Config) { c.Transcribe.Window = "" }, "transcribe.window:"},
		{"window steps", func(c *Config) { c.Transcribe.Window = "steps" }, ""},
		{"key code", func(c *Config) { c.Input.PTT.KeyCode = 0 }, "input.ptt.key_code:"},
		{"no capture trigger", func(c *Config) { c.Input.HandsFree = false }, "input.hands_free:"},
		{"ptt only ok", func(c *Config) {
			c.Input.HandsFree = false
			c.Input.PTT.Enabled = true
			c.Input.PTT.EvdevDevice = "/dev/input/event0"
		}, ""},
		{"source empty", func(c *Config) { c.Input.Source = "" }, "input.source:"},
		{"source wav missing", func(c *Config) { c.Input.Source = "/nonexistent/x.wav" }, "input.source:"},
		{"source wav ok", func(c *Config) { c.Input.Source = wav }, ""},
		{"whisper empty", func(c *Config) { c.Models.Whisper = "" }, "models.whisper:"},
		{"onset", func(c *Config) { c.Segment.VADOnset = 1 }, "segment.vad_onset:"},
		{"offset above onset", func(c *Config) { c.Segment.VADOffset = 0.9 }, "segment.vad_offset:"},
		{"gate", func(c *Config) { c.Segment.EnergyGateDBFS = 3 }, "segment.energy_gate_dbfs:"},
		{"max utterance", func(c *Config) { c.Segment.MaxUtterance = Duration(time.Minute) }, "segment.max_utterance:"},
		{"hangover", func(c *Config) { c.Segment.Hangover = Duration(-time.Second) }, "segment.hangover:"},
		{"ptt max utterance long", func(c *Config) { c.Input.PTT.MaxUtterance = Duration(time.Minute) }, "input.ptt.max_utterance:"},
		{"ptt max utterance zero", func(c *Config) { c.Input.PTT.MaxUtterance = 0 }, "input.ptt.max_utterance:"},
		{"ptt stuck after negative", func(c *Config) { c.Input.PTT.StuckAfter = Duration(-time.Second) }, "input.ptt.stuck_after:"},
		{"ptt stuck never", func(c *Config) { c.Input.PTT.StuckAfter = 0 }, ""},
		{"wake empty word", func(c *Config) { c.Wake.Words = []string{"agora", " "} }, "wake.words[1]:"},
		{"wake duplicate", func(c *Config) { c.Wake.ListenWords = []string{"luister", "Luister!"} }, "wake.listen_words[1]:"},
		{"wake reject rejects the wake word", func(c *Config) { c.Wake.Reject = []string{"angora", "Agorah"} }, "wake.reject[1]:"},
		{"wake custom ok", func(c *Config) { c.Wake.Words = []string{"agora", "hey agora"} }, ""},
		{"wake spotter unknown", func(c *Config) { c.Wake.Spotter = "maybe" }, "wake.spotter:"},
		{"wake spotter off", func(c *Config) { c.Wake.Spotter = "off" }, ""},
		{"wake spotter threshold", func(c *Config) { c.Wake.SpotterThreshold = 1.5 }, "wake.spotter_threshold:"},
		{"wake spotter head missing", func(c *Config) { c.Wake.SpotterHead = "no/such/dir" }, "wake.spotter_head:"},
		{"wake spotter head", func(c *Config) { c.Wake.SpotterHead = "../wake/kws/testdata/headdir" }, ""},
		{"wake bias negative", func(c *Config) { b := -1.0; c.Wake.Bias = &b }, "wake.bias:"},
		{"wake bias too strong", func(c *Config) { b := 50.0; c.Wake.Bias = &b }, "wake.bias:"},
		{"wake bias off", func(c *Config) { b := 0.0; c.Wake.Bias = &b }, ""},
		{"wake fuse of 1", func(c *Config) { f := 1.0; c.Wake.Fuse = &f }, "wake.fuse:"},
		{"wake fuse off", func(c *Config) { f := 0.0; c.Wake.Fuse = &f }, ""},
		{"wake fuse_like of 0", func(c *Config) { f, l := 0.9, 0.0; c.Wake.Fuse, c.Wake.FuseLike = &f, &l }, "wake.fuse_like:"},
		{"post pad", func(c *Config) { c.Segment.PostPad = Duration(-1) }, "segment.post_pad:"},
		{"wearer expected positive", func(c *Config) { c.Wearer.ExpectedDBFS = 3 }, "wearer.expected_dbfs:"},
		{"wearer below zero", func(c *Config) { c.Wearer.BelowDB = 0 }, "wearer.below_db:"},
		{"wearer frame below too far", func(c *Config) { c.Wearer.FrameBelowDB = 60 }, "wearer.frame_below_db:"},
		{"wearer word below negative", func(c *Config) { c.Wearer.WordBelowDB = -3 }, "wearer.word_below_db:"},
		{"wearer snr negative", func(c *Config) { c.Wearer.MinSNRDB = -1 }, "wearer.min_snr_db:"},
		{"wearer hold long", func(c *Config) { c.Wearer.Hold = Duration(time.Minute) }, "wearer.hold:"},
		{"wearer lookahead negative", func(c *Config) { c.Wearer.Lookahead = Duration(-time.Millisecond) }, "wearer.lookahead:"},
		{"wearer off", func(c *Config) { c.Wearer.Enabled = false }, ""},
		{"speculate after the turn", func(c *Config) { c.Segment.SpeculateAfter = c.Segment.Hangover }, "segment.speculate_after:"},
		{"speculate inside the padding", func(c *Config) { c.Segment.SpeculateAfter = Duration(100 * time.Millisecond) }, "segment.speculate_after:"},
		{"speculate off", func(c *Config) { c.Segment.SpeculateAfter, c.Segment.CompleteWait = 0, 0 }, ""},
		{"complete wait off", func(c *Config) { c.Segment.CompleteWait = 0 }, ""},
		{"complete wait at the hangover", func(c *Config) { c.Segment.CompleteWait = c.Segment.Hangover }, "segment.complete_wait:"},
		{"complete wait inside the padding", func(c *Config) { c.Segment.CompleteWait = Duration(100 * time.Millisecond) }, "segment.complete_wait:"},
		{"complete wait before the speculation", func(c *Config) {
			c.Segment.SpeculateAfter, c.Segment.CompleteWait = Duration(600*time.Millisecond), Duration(400*time.Millisecond)
		}, "segment.complete_wait:"},
		{"complete wait without speculation", func(c *Config) { c.Segment.SpeculateAfter = 0 }, "segment.complete_wait:"},
		{"complete rule unknown", func(c *Config) { c.Segment.CompleteRule = "maybe" }, "segment.complete_rule:"},
		{"complete rule sentence", func(c *Config) { c.Segment.CompleteRule = "sentence" }, ""},
		{"max bytes tiny", func(c *Config) { c.Storage.MaxBytes = 1000 }, "storage.max_bytes:"},
		{"max bytes none", func(c *Config) { c.Storage.MaxBytes = 0 }, ""},
		{"sync", func(c *Config) { c.Storage.Sync = "sometimes" }, "storage.sync:"},
		{"retention", func(c *Config) { c.Storage.AudioRetention = "forever" }, "storage.audio_retention:"},
		{"tls half", func(c *Config) { c.MQTT.Broker = "ssl://b:8883"; c.MQTT.TLS.CertFile = wav }, "mqtt.tls: cert_file and key_file"},
		{"tls missing file", func(c *Config) { c.MQTT.Broker = "ssl://b:8883"; c.MQTT.TLS.CAFile = "/nonexistent/ca.pem" }, "mqtt.tls.ca_file:"},
		{"tls on tcp", func(c *Config) { c.MQTT.TLS.CAFile = wav }, "mqtt.tls: is set but mqtt.broker"},
		{"keepalive", func(c *Config) { c.MQTT.Keepalive = Duration(time.Second) }, "mqtt.keepalive:"},
		{"reconnect order", func(c *Config) { c.MQTT.ReconnectMax = Duration(200 * time.Millisecond) }, "mqtt.reconnect_max:"},
		{"reconnect ceiling an hour", func(c *Config) { c.MQTT.ReconnectMax = Duration(time.Hour) }, "mqtt.reconnect_max:"},
		{"thinking cue too soon", func(c *Config) { c.Replies.ThinkingAfter = Duration(100 * time.Millisecond) }, "replies.thinking_after:"},
		{"thinking cue off", func(c *Config) { c.Replies.ThinkingAfter = 0 }, ""},
		{"reconnect ceiling 10m", func(c *Config) { c.MQTT.ReconnectMax = Duration(10 * time.Minute) }, ""},
		{"socket empty", func(c *Config) { c.Control.Socket = "" }, "control.socket:"},
		{"socket long", func(c *Config) { c.Control.Socket = "/" + strings.Repeat("a", 120) }, "control.socket:"},
		{"log level", func(c *Config) { c.Log.Level = "verbose" }, "log.level:"},
		{"log format", func(c *Config) { c.Log.Format = "xml" }, "log.format:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.mod(c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestValidationReportsAllProblems(t *testing.T) {
	clearEnv(t)
	_, err := Load(writeConfig(t, "mode: x\nsounds:\n  volume: 2\nlog:\n  level: loud\nmqtt:\n  password_file: /nonexistent/pw\n"))
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{"mode:", "sounds.volume:", "log.level:", "mqtt.password_file:"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q misses %q", err, w)
		}
	}
}

func TestSecrets(t *testing.T) {
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte("s3cret-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, yaml string
		env        map[string]string
		want       string // the password loaded; "" means an error is expected
		errHas     []string
	}{
		{name: "password_file trimmed", yaml: "mqtt:\n  password_file: " + pwFile + "\n", want: "s3cret-from-file"},
		{name: "password_file env expanded", yaml: "mqtt:\n  password_file: ${CREDENTIALS_DIRECTORY}/pw\n",
			env: map[string]string{"CREDENTIALS_DIRECTORY": dir}, want: "s3cret-from-file"},
		{name: "password_file missing names file", yaml: "mqtt:\n  password_file: /nonexistent/agorad-pw\n",
			errHas: []string{"mqtt.password_file", "/nonexistent/agorad-pw"}},
		{name: "both set", yaml: "mqtt:\n  password: a\n  password_file: " + pwFile + "\n", errHas: []string{"both set"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			c, err := Load(writeConfig(t, tt.yaml))
			if tt.want != "" {
				if err != nil || c.MQTT.Password != tt.want {
					t.Fatalf("Load = %v; want password %q", err, tt.want)
				}
				return
			}
			for _, w := range tt.errHas {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("err = %v, want it to name %q", err, w)
				}
			}
		})
	}
	t.Run("env overrides", func(t *testing.T) {
		t.Setenv(EnvMQTTPassword, "from-env")
		t.Setenv(EnvMQTTUsername, "inspector")
		c, err := Load(writeConfig(t, "mqtt:\n  username: u\n  password_file: /nonexistent/never-read\n"))
		if err != nil {
			t.Fatal(err)
		}
		if c.MQTT.Password != "from-env" || c.MQTT.Username != "inspector" {
			t.Fatalf("got %q/%q", c.MQTT.Username, c.MQTT.Password)
		}
		// Secrets never printed.
		var logBuf bytes.Buffer
		slog.New(slog.NewTextHandler(&logBuf, nil)).Info("config", "cfg", c)
		for _, out := range []string{c.String(), logBuf.String()} {
			if strings.Contains(out, "from-env") {
				t.Fatalf("password printed: %s", out)
			}
			if !strings.Contains(out, "REDACTED") || !strings.Contains(out, "inspector") {
				t.Fatalf("redacted output lacks expected fields: %s", out)
			}
		}
		if c.MQTT.Password != "from-env" {
			t.Fatal("Redacted modified the original")
		}
		// The String() output is itself a loadable config.
		if _, err := Parse([]byte(c.String()), "redacted"); err != nil {
			t.Fatalf("String() output does not parse: %v", err)
		}
	})
}

func TestDiff(t *testing.T) {
	base := Default()
	tests := []struct {
		name    string
		mod     func(c *Config)
		changed []string
	}{
		{"none", func(c *Config) {}, nil},
		{"log level", func(c *Config) { c.Log.Level = "debug" }, []string{"log.level"}},
		{"sounds and wake", func(c *Config) {
			c.Sounds.Volume = 0.1
			c.Wake.Words = []string{"agora", "agorah"}
		}, []string{"wake.words", "sounds.volume"}},
		{"reconnect", func(c *Config) { c.MQTT.ReconnectMax = Duration(time.Minute) }, []string{"mqtt.reconnect_max"}},
		{"broker and model", func(c *Config) {
			c.MQTT.Broker = "tcp://other:1883"
			c.Models.Whisper = "small"
		}, []string{"models.whisper", "mqtt.broker"}},
		{"mixed, secret by path only", func(c *Config) {
			c.Log.Level = "warn"
			c.StateDir = "/tmp/x"
			c.MQTT.Password = "new"
		}, []string{"state_dir", "mqtt.password", "log.level"}},
		{"nil vs empty slice", func(c *Config) { c.Transcribe.Contexts = nil }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next := Default()
			tc.mod(next)
			if got := base.Diff(next); !reflect.DeepEqual(got, tc.changed) {
				t.Fatalf("Diff = %v, want %v", got, tc.changed)
			}
		})
	}
}

func TestWakeRules(t *testing.T) {
	def := wake.DefaultConfig()
	if got := (Wake{}).Rules(); !reflect.DeepEqual(got, def) {
		t.Fatalf("empty lists: %+v, want the wake defaults %+v", got, def)
	}
	got := Wake{Words: []string{"agora", "agorra"}}.Rules()
	if !reflect.DeepEqual(got.Words, []string{"agora", "agorra"}) || !reflect.DeepEqual(got.ListenWords, def.ListenWords) {
		t.Fatalf("custom words: %+v", got)
	}
	if _, err := wake.New(Default().Wake.Rules()); err != nil {
		t.Fatalf("default wake rules rejected by wake.New: %v", err)
	}
}

func TestSlogLevel(t *testing.T) {
	for in, want := range map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError} {
		if got := (Log{Level: in}).SlogLevel(); got != want {
			t.Errorf("%s: %v", in, got)
		}
	}
}

func TestDeviceIDSanitized(t *testing.T) {
	for _, host := range []string{"host name/with+bad#chars", strings.Repeat("long-hostname.", 10)} {
		if err := protocol.ValidateDeviceID(sanitizeID(host)); err != nil {
			t.Errorf("sanitizeID(%q): %v", host, err)
		}
	}
}

func TestNewLogger(t *testing.T) {
	var lv slog.LevelVar
	lv.Set((Log{Level: "warn"}).SlogLevel())
	for _, tc := range []struct{ format, want string }{{"json", `"msg":"shown"`}, {"text", "msg=shown"}} {
		var buf bytes.Buffer
		lg := Log{Format: tc.format}.NewLogger(&buf, &lv)
		lg.Info("hidden")
		lg.Warn("shown")
		if strings.Contains(buf.String(), "hidden") || !strings.Contains(buf.String(), tc.want) {
			t.Errorf("%s: %q", tc.format, buf.String())
		}
	}
	// Reload: the same logger follows the LevelVar.
	var buf bytes.Buffer
	lg := Log{Format: "text"}.NewLogger(&buf, &lv)
	lv.Set(slog.LevelDebug)
	lg.Debug("now visible")
	if !strings.Contains(buf.String(), "now visible") {
		t.Error("level change not applied")
	}
}

func TestModelsDir(t *testing.T) {
	c := Default()
	if got := c.ModelsDir(); got != "/var/lib/agorad/models" {
		t.Fatalf("default ModelsDir = %s", got)
	}
	c.Models.Dir = "/opt/models"
	if got := c.ModelsDir(); got != "/opt/models" {
		t.Fatalf("ModelsDir = %s", got)
	}
}

// Issue 9, item 7: a 0644 password_file or a world-readable config holding
// a password gives a warning naming the file; 0600 gives none. Issue 27: an
// encryption_key_file is held to the password_file rule.
func TestSecretWarnings(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	cfgPW := filepath.Join(dir, "with-password.yaml")
	cfgFile := filepath.Join(dir, "with-file.yaml")
	os.WriteFile(cfgPW, []byte("mqtt:\n  password: s3cret\n"), 0o644)
	os.WriteFile(cfgFile, []byte("mqtt:\n  password_file: "+pw+"\n"), 0o644)
	cfgKey := filepath.Join(dir, "with-key.yaml")
	os.WriteFile(cfgKey, []byte("storage:\n  encryption_key_file: "+pw+"\n"), 0o644)
	for _, tc := range []struct {
		name       string
		cfg        string
		pwMode     os.FileMode
		cfgMode    os.FileMode
		wantSubstr string // "" means no warning
	}{
		{"password_file 0644", cfgFile, 0o644, 0o644, "mqtt.password_file: " + pw + " has mode 0644"},
		{"password_file 0600", cfgFile, 0o600, 0o644, ""},
		{"config with password 0644", cfgPW, 0o600, 0o644, "holds mqtt.password and has mode 0644"},
		{"config with password 0640", cfgPW, 0o600, 0o640, ""},
		{"encryption_key_file 0644", cfgKey, 0o644, 0o600, "storage.encryption_key_file: " + pw + " has mode 0644"},
		{"encryption_key_file 0640", cfgKey, 0o640, 0o600, "storage.encryption_key_file: " + pw + " has mode 0640"},
		{"encryption_key_file 0600", cfgKey, 0o600, 0o644, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.WriteFile(pw, []byte("s3cret\n"), tc.pwMode)
			os.Chmod(pw, tc.pwMode)
			os.Chmod(tc.cfg, tc.cfgMode)
			c, err := Load(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			w := c.SecretWarnings(tc.cfg)
			if tc.wantSubstr == "" {
				if len(w) != 0 {
					t.Errorf("warnings %q, want none", w)
				}
				return
			}
			if len(w) != 1 || !strings.Contains(w[0], tc.wantSubstr) {
				t.Errorf("warnings %q, want one containing %q", w, tc.wantSubstr)
			}
		})
	}
}

// Issue 27: a hostname-derived id is made one the configured engine
// carries (nats: no '.'), so a default configuration starts on NATS.
func TestEngineSafeDerivedID(t *testing.T) {
	for _, tc := range []struct{ engine, in, want string }{
		{EngineMosquitto, "insp.example.org", "insp.example.org"},
		{EngineNATS, "insp.example.org", "insp-example-org"},
		{EngineNATS, "insp-1", "insp-1"},
	} {
		got := engineSafeID(tc.engine, sanitizeID(tc.in))
		if got != tc.want {
			t.Errorf("%s %q: %q, want %q", tc.engine, tc.in, got, tc.want)
		}
		if err := EngineDeviceID(tc.engine, got); err != nil {
			t.Errorf("%s %q: derived %q refused: %v", tc.engine, tc.in, got, err)
		}
	}
}

func TestVocabularyTerms(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, "mine.txt")
	if err := os.WriteFile(own, []byte("# mine\nstramien\n\nbalklaag # a comment\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	long := filepath.Join(dir, "long.txt")
	if err := os.WriteFile(long, []byte(strings.Repeat("woord\n", 65)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		vocab   map[string]string
		want    map[string][]string
		wantErr string
	}{
		{"none", nil, map[string][]string{}, ""},
		{"own file", map[string]string{"nl": own}, map[string][]string{"nl": {"stramien", "balklaag"}}, ""},
		{"unknown language", map[string]string{"vlaams": own}, nil, `transcribe.vocabulary.vlaams: "vlaams" is not a language`},
		{"missing file", map[string]string{"nl": filepath.Join(dir, "nope.txt")}, nil, "transcribe.vocabulary.nl: open"},
		{"too many", map[string]string{"nl": long}, nil, "transcribe.vocabulary.nl: " + long + ": 65 terms"},
	} {
		tr := Transcribe{Vocabulary: c.vocab}
		got, err := tr.VocabularyTerms()
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: err %v, want %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	built, err := Transcribe{Vocabulary: map[string]string{"nl": "inspection-nl"}}.VocabularyTerms()
	if err != nil || !slices.Contains(built["nl"], "lateiprofiel") || !slices.Contains(built["nl"], "NEN 2767") {
		t.Errorf("built-in inspection-nl: %v, %v", built, err)
	}
}
