package configs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// Environment variables that override secrets, so they need not be written
// into a group-readable file.
const (
	EnvMQTTUsername = "AGORAD_MQTT_USERNAME"
	EnvMQTTPassword = "AGORAD_MQTT_PASSWORD"
)

var defaultOnce = sync.OnceValues(func() (*Config, error) {
	c := &Config{}
	if err := decode(DefaultYAML, "embedded agorad.yaml", c); err != nil {
		return nil, err
	}
	return c, nil
})

// Default returns the shipped defaults (the embedded agorad.yaml). DeviceID
// and MQTT.ClientID stay empty: Load derives them on the machine it runs on.
func Default() *Config {
	c, err := defaultOnce()
	if err != nil {
		// The embedded file is tested; failing here is a build defect.
		panic(fmt.Sprintf("configs: %v", err))
	}
	return c.clone()
}

func (c *Config) clone() *Config {
	cp := *c
	cp.Transcribe.Contexts = slices.Clone(c.Transcribe.Contexts)
	cp.Transcribe.Languages = slices.Clone(c.Transcribe.Languages)
	cp.Transcribe.Vocabulary = maps.Clone(c.Transcribe.Vocabulary)
	cp.Wake.Words = slices.Clone(c.Wake.Words)
	cp.Wake.ListenWords = slices.Clone(c.Wake.ListenWords)
	cp.Wake.Reject = slices.Clone(c.Wake.Reject)
	if c.Wake.Bias != nil {
		b := *c.Wake.Bias
		cp.Wake.Bias = &b
	}
	return &cp
}

// Parse decodes YAML strictly over the defaults: fields not given keep their
// default, unknown fields are errors naming the field path and line. It does
// not read the environment or files and does not validate; Load does.
func Parse(data []byte, name string) (*Config, error) {
	c := Default()
	if err := decode(data, name, c); err != nil {
		return nil, err
	}
	return c, nil
}

// Load reads the configuration file (path "" means defaults only), applies
// the environment overrides and password_file, derives device_id and
// client_id when empty, and validates. Every problem is reported at once.
func Load(path string) (*Config, error) {
	c := Default()
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read config: %w", err)
		}
		if c, err = Parse(data, path); err != nil {
			return nil, err
		}
	}
	name := path
	if name == "" {
		name = "(built-in defaults)"
	}
	// Both steps run so every problem is reported at once.
	if err := errors.Join(c.resolve(), c.Validate()); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	return c, nil
}

// resolve fills what depends on the machine and the environment.
func (c *Config) resolve() error {
	if v := os.Getenv(EnvMQTTUsername); v != "" {
		c.MQTT.Username = v
	}
	if v := os.Getenv(EnvMQTTPassword); v != "" {
		c.MQTT.Password = v
	} else if c.MQTT.PasswordFile != "" {
		if c.MQTT.Password != "" {
			return errors.New("mqtt.password and mqtt.password_file are both set: keep one")
		}
		p := os.ExpandEnv(c.MQTT.PasswordFile)
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("mqtt.password_file: %w", err)
		}
		c.MQTT.Password = strings.TrimRight(string(b), "\r\n")
		if c.MQTT.Password == "" {
			return fmt.Errorf("mqtt.password_file: %s is empty", p)
		}
	}
	if c.DeviceID == "" {
		c.DeviceID = engineSafeID(c.MQTT.Engine, machineDeviceID())
	}
	if c.MQTT.ClientID == "" {
		c.MQTT.ClientID = "agorad-" + c.DeviceID
	}
	return nil
}

// machineDeviceID derives a stable id. The machine id is hashed with an
// application tag because machine-id(5) asks that it not be exposed on the
// network; the hostname is the fallback on systems without one.
func machineDeviceID() string {
	for _, p := range []string{"/etc/machine-id", "/var/lib/dbus/machine-id"} {
		if b, err := os.ReadFile(p); err == nil {
			if id := strings.TrimSpace(string(b)); id != "" {
				sum := sha256.Sum256([]byte("agorad:" + id))
				return "agora-" + hex.EncodeToString(sum[:6])
			}
		}
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "agora-unknown"
	}
	return sanitizeID(h)
}

func sanitizeID(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 64 { // the device id limit
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

// decode checks the document against the Config shape (so errors carry the
// field path and line), then decodes it into c.
func decode(data []byte, name string, c *Config) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("parse %s: %w", name, err)
	}
	if len(doc.Content) == 0 {
		return nil // empty file: all defaults
	}
	var errs []error
	check(doc.Content[0], reflect.TypeOf(*c), "", &errs)
	if len(errs) > 0 {
		return fmt.Errorf("config %s: %w", name, errors.Join(errs...))
	}
	if err := doc.Content[0].Decode(c); err != nil {
		return fmt.Errorf("decode %s: %w", name, err)
	}
	return nil
}

var durationType = reflect.TypeOf(Duration(0))

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// check walks the YAML node and the Go type together.
func check(n *yaml.Node, t reflect.Type, path string, errs *[]error) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch {
	case t == durationType:
		if _, err := parseDuration(n); err != nil {
			*errs = append(*errs, fmt.Errorf("%s: %v (line %d)", path, err, n.Line))
		}
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			*errs = append(*errs, fmt.Errorf("%s: expected a mapping of fields (line %d)", orRoot(path), n.Line))
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			f, ok := fieldByTag(t, k.Value)
			if !ok {
				*errs = append(*errs, fmt.Errorf("%s: unknown field (line %d)", join(path, k.Value), k.Line))
				continue
			}
			check(v, f.Type, join(path, k.Value), errs)
		}
	case t.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			*errs = append(*errs, fmt.Errorf("%s: expected a mapping (line %d)", path, n.Line))
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			check(k, t.Key(), path, errs)
			check(v, t.Elem(), join(path, k.Value), errs)
		}
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			*errs = append(*errs, fmt.Errorf("%s: expected a list (line %d)", path, n.Line))
			return
		}
		for i, e := range n.Content {
			check(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), errs)
		}
	default:
		if n.Kind != yaml.ScalarNode {
			*errs = append(*errs, fmt.Errorf("%s: expected a single %s value (line %d)", path, t.Kind(), n.Line))
			return
		}
		if t.Kind() == reflect.String && n.Tag != "!!str" {
			// Plain scalars (a device index written as 3) are text too.
			return
		}
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			*errs = append(*errs, fmt.Errorf("%s: %q is not a valid %s (line %d)", path, n.Value, kindName(t), n.Line))
		}
	}
}

func orRoot(p string) string {
	if p == "" {
		return "config"
	}
	return p
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "boolean (true or false)"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "integer"
	case reflect.Float64, reflect.Float32:
		return "number"
	}
	return t.Kind().String()
}

func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if yamlName(f) == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func yamlName(f reflect.StructField) string {
	tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return tag
}

// Paths lists every leaf field path of Config ("mqtt.tls.ca_file"), in
// declaration order.
func Paths() []string {
	var out []string
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			p := join(path, yamlName(f))
			if f.Type.Kind() == reflect.Struct && f.Type != durationType {
				walk(f.Type, p)
				continue
			}
			out = append(out, p)
		}
	}
	walk(reflect.TypeOf(Config{}), "")
	return out
}

// leaves maps each leaf path to its value.
func leaves(c *Config) map[string]any {
	out := map[string]any{}
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			p := join(path, yamlName(f))
			if f.Type.Kind() == reflect.Struct && f.Type != durationType {
				walk(v.Field(i), p)
				continue
			}
			out[p] = v.Field(i).Interface()
		}
	}
	walk(reflect.ValueOf(*c), "")
	return out
}

// Diff lists the fields whose values differ between c and next, as paths
// in declaration order ("log.level", "mqtt.password"): what a SIGHUP
// changed. Secret values never appear, only their paths. An empty list and
// a missing one are the same.
func (c *Config) Diff(next *Config) []string {
	a, b := leaves(c), leaves(next)
	var changed []string
	for _, p := range Paths() {
		if reflect.DeepEqual(a[p], b[p]) || (isEmptySlice(a[p]) && isEmptySlice(b[p])) {
			continue
		}
		changed = append(changed, p)
	}
	return changed
}

func isEmptySlice(v any) bool {
	s, ok := v.([]string)
	return ok && len(s) == 0
}

const redacted = "REDACTED"

// Redacted returns a copy safe to log: the MQTT password is replaced.
func (c *Config) Redacted() *Config {
	cp := c.clone()
	if cp.MQTT.Password != "" {
		cp.MQTT.Password = redacted
	}
	return cp
}

// String renders the redacted configuration as YAML.
func (c *Config) String() string {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(c.Redacted()); err != nil {
		return fmt.Sprintf("<config: %v>", err)
	}
	return buf.String()
}

// LogValue keeps secrets out of slog output when a Config is logged.
func (c *Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// SlogLevel converts log.level (validated) to a slog.Level.
func (l Log) SlogLevel() slog.Level {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(l.Level)); err != nil {
		return slog.LevelInfo
	}
	return lv
}

// quote is strconv.Quote, named for readability in the validation table.
func quote(s string) string { return strconv.Quote(s) }

// NewLogger builds the logger log.format asks for. The level is read from lv
// on every record, so a SIGHUP applies log.level with lv.Set(l.SlogLevel());
// a format change needs a restart.
func (l Log) NewLogger(w io.Writer, lv *slog.LevelVar) *slog.Logger {
	opts := &slog.HandlerOptions{Level: lv}
	if l.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
