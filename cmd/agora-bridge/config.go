package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is agora-bridge's YAML configuration (configs/agora-bridge.yaml).
type Config struct {
	Broker struct {
		URL          string `yaml:"url"`
		ClientID     string `yaml:"client_id"`
		Username     string `yaml:"username"`
		PasswordFile string `yaml:"password_file"`
		CAFile       string `yaml:"ca_file"`
		CertFile     string `yaml:"cert_file"`
		KeyFile      string `yaml:"key_file"`
	} `yaml:"broker"`
	// JetStream set (url) switches to fleet mode: devices talk MQTT to
	// nats-server (broker.url is its MQTT listener) and bridges consume
	// through JetStream partitions.
	JetStream struct {
		URL        string   `yaml:"url"`
		Partitions int      `yaml:"partitions"`
		AckWait    Duration `yaml:"ack_wait"`
		Replicas   int      `yaml:"replicas"`
		// DeviceHold: a run going longer moves its device aside (its later
		// messages into a backlog in the KV bucket) so the partition goes on.
		DeviceHold      Duration `yaml:"device_hold"`
		MaxAsideDevices int      `yaml:"max_aside_devices"`
	} `yaml:"jetstream"`
	Agent struct {
		URL          string   `yaml:"url"`
		Timeout      Duration `yaml:"timeout"`
		MaxConns     int      `yaml:"max_conns"`
		MaxRuns      int      `yaml:"max_concurrent_runs"`
		ThreadPrefix string   `yaml:"thread_prefix"`
		// Stream: what of an answer goes to the device while the graph
		// writes it (bridge.StreamSpoken, StreamWritten, StreamOff).
		Stream string `yaml:"stream"`
	} `yaml:"agent"`
	Retry struct {
		Initial        Duration `yaml:"initial"`
		Max            Duration `yaml:"max"`
		MaxElapsed     Duration `yaml:"max_elapsed"`
		RejectAttempts int      `yaml:"reject_attempts"`
	} `yaml:"retry"`
	// Limits bound what one device (or a stranger on the broker) can make
	// the bridge hold or refuse (docs/bridge.md "Limits").
	Limits struct {
		MaxSeqJump      int      `yaml:"max_seq_jump"`
		MaxBatchBytes   int      `yaml:"max_batch_bytes"`
		JoinBudget      int      `yaml:"join_budget"`
		PartTTL         Duration `yaml:"part_ttl"`
		QueuePerDevice  int      `yaml:"queue_per_device"`
		MaxBacklog      int      `yaml:"max_backlog"`
		MaxBacklogBytes int64    `yaml:"max_backlog_bytes"`
		WorkerIdle      Duration `yaml:"worker_idle"`
	} `yaml:"limits"`
	State struct {
		Dir        string `yaml:"dir"`
		SyncWrites *bool  `yaml:"sync_writes"`
	} `yaml:"state"`
	Metrics struct {
		Listen    string `yaml:"listen"` // empty: off
		PerDevice bool   `yaml:"per_device"`
	} `yaml:"metrics"`
	Log struct {
		Level  string `yaml:"level"`
		Format string `yaml:"format"` // text or json
	} `yaml:"log"`
}

// Duration is a time.Duration written as "30s" in YAML.
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (e.g. 500ms, 30s, 10m)", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

func defaults() Config {
	var c Config
	c.Broker.URL = "tcp://127.0.0.1:1883"
	c.Broker.ClientID = "agora-bridge"
	c.JetStream.Partitions = 16
	c.JetStream.AckWait = Duration(30 * time.Second)
	c.JetStream.DeviceHold = Duration(10 * time.Second)
	c.JetStream.MaxAsideDevices = 1024
	c.Agent.Timeout = Duration(2 * time.Minute)
	c.Agent.MaxConns = 256
	c.Agent.MaxRuns = 64
	c.Agent.Stream = "spoken"
	c.Retry.Initial = Duration(500 * time.Millisecond)
	c.Retry.Max = Duration(30 * time.Second)
	c.Retry.MaxElapsed = Duration(10 * time.Minute)
	c.Retry.RejectAttempts = 1
	c.Limits.MaxSeqJump = 100000
	c.Limits.MaxBatchBytes = 16 << 20
	c.Limits.JoinBudget = 64 << 20
	c.Limits.PartTTL = Duration(time.Hour)
	c.Limits.QueuePerDevice = 16
	c.Limits.MaxBacklog = 10000
	c.Limits.MaxBacklogBytes = 64 << 20
	c.Limits.WorkerIdle = Duration(time.Minute)
	c.Metrics.PerDevice = true
	c.Log.Level = "info"
	c.Log.Format = "text"
	return c
}

// load reads path (strict: unknown keys are errors) over the defaults.
func load(path string) (Config, error) {
	c := defaults()
	if path == "" {
		return c, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("read config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// validate names the field at fault.
func (c *Config) validate() error {
	checkURL := func(field, v string, schemes ...string) error {
		u, err := url.Parse(v)
		if err != nil || u.Host == "" {
			return fmt.Errorf("%s: %q is not a URL (want %s://host:port)", field, v, schemes[0])
		}
		for _, s := range schemes {
			if u.Scheme == s {
				return nil
			}
		}
		return fmt.Errorf("%s: %q: scheme must be one of %s", field, v, strings.Join(schemes, ", "))
	}
	if err := checkURL("broker.url", c.Broker.URL, "tcp", "mqtt", "ssl", "tls", "mqtts"); err != nil {
		return err
	}
	if c.Agent.URL == "" {
		return errors.New("agent.url: required (--agui-url)")
	}
	if err := checkURL("agent.url", c.Agent.URL, "http", "https"); err != nil {
		return err
	}
	switch c.Agent.Stream {
	case "spoken", "written", "off":
	default:
		return fmt.Errorf("agent.stream: %q, want spoken, written or off", c.Agent.Stream)
	}
	if c.JetStream.URL != "" {
		if err := checkURL("jetstream.url", c.JetStream.URL, "nats", "tls"); err != nil {
			return err
		}
		if c.JetStream.Partitions < 1 || c.JetStream.Partitions > 4096 {
			return fmt.Errorf("jetstream.partitions: %d, want 1..4096 (the server mapping's partition count)", c.JetStream.Partitions)
		}
		if c.JetStream.DeviceHold <= 0 {
			return fmt.Errorf("jetstream.device_hold: %v, want > 0", time.Duration(c.JetStream.DeviceHold))
		}
		if c.JetStream.MaxAsideDevices < 1 {
			return fmt.Errorf("jetstream.max_aside_devices: %d, want > 0", c.JetStream.MaxAsideDevices)
		}
	}
	if c.State.Dir == "" {
		return errors.New("state.dir: required (--state-dir)")
	}
	if c.Retry.RejectAttempts < 1 {
		return fmt.Errorf("retry.reject_attempts: %d, want >= 1", c.Retry.RejectAttempts)
	}
	if c.Retry.Max < c.Retry.Initial {
		return fmt.Errorf("retry.max %v is less than retry.initial %v", time.Duration(c.Retry.Max), time.Duration(c.Retry.Initial))
	}
	for _, l := range []struct {
		field string
		v     int64
	}{{"max_seq_jump", int64(c.Limits.MaxSeqJump)}, {"max_batch_bytes", int64(c.Limits.MaxBatchBytes)},
		{"join_budget", int64(c.Limits.JoinBudget)}, {"part_ttl", int64(c.Limits.PartTTL)},
		{"queue_per_device", int64(c.Limits.QueuePerDevice)}, {"max_backlog", int64(c.Limits.MaxBacklog)},
		{"max_backlog_bytes", c.Limits.MaxBacklogBytes}, {"worker_idle", int64(c.Limits.WorkerIdle)}} {
		if l.v < 1 {
			return fmt.Errorf("limits.%s: %d, want > 0", l.field, l.v)
		}
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("log.level: %q, want debug, info, warn or error", c.Log.Level)
	}
	return nil
}
