package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/cmd/agorad/internal/evdev"
	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/sync/uplink"
	"github.com/agora/agorad/transcribe/model"
)

// check is one line of `agorad doctor`: what was checked, whether it is
// fine, what was seen and, when not fine, how to fix it.
type check struct {
	Name   string `json:"name"`
	Status string `json:"status"` // ok, warn, fail, skip
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// doctorEnv lets tests replace what touches hardware and the clock.
type doctorEnv struct {
	now         func() time.Time
	openMic     func(ctx context.Context, device string) (audio.Source, error)
	openSpeaker func(device string) error
	brokerWait  time.Duration
	// pttWait > 0: wait this long for the technician to press the
	// push-to-talk key (--ptt-wait).
	pttWait time.Duration
	// audioNoise keeps what the audio libraries print on stderr (-v).
	audioNoise bool
	// compute loads ggml's CPU backend (doctor_compute.go).
	compute func() (computeInfo, error)
}

func realDoctorEnv() doctorEnv {
	return doctorEnv{
		now: time.Now,
		openMic: func(ctx context.Context, device string) (audio.Source, error) {
			return audio.OpenCapture(ctx, audio.CaptureOptions{Device: device})
		},
		openSpeaker: func(device string) error {
			p, err := audio.OpenPlayer(audio.PlayerOptions{Device: device, Volume: 0})
			if err != nil {
				return err
			}
			return p.Close()
		},
		brokerWait: 3 * time.Second,
		compute:    realCompute,
	}
}

// cmdDoctor is `agorad doctor`: one line per check with a fix, --json for
// fleet tooling; exit 1 when a check failed.
func cmdDoctor(ctx context.Context, args []string, stdout, stderr io.Writer, env doctorEnv) int {
	fs := flag.NewFlagSet("agorad doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("c", "/etc/agorad/agorad.yaml", "configuration file")
	asJSON := fs.Bool("json", false, "JSON output (one object with a checks array)")
	fs.BoolVar(&env.audioNoise, "v", env.audioNoise, "keep the audio libraries' own messages (ALSA, JACK probing) on stderr")
	fs.DurationVar(&env.pttWait, "ptt-wait", env.pttWait, "wait up to this long (e.g. 10s) for a press of the push-to-talk key")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: agorad doctor [-c FILE] [--json] [--ptt-wait D] [-v]\n\nChecks the device's setup, one line per check with a fix; exit 1 when one failed.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageCode(err)
	}
	if *asJSON && env.pttWait > 0 {
		fmt.Fprintf(stderr, "agorad doctor: press the push-to-talk key within %s\n", env.pttWait)
	}
	checks := runDoctor(ctx, *cfgPath, env)
	failed := false
	for _, c := range checks {
		failed = failed || c.Status == "fail"
	}
	if *asJSON {
		json.NewEncoder(stdout).Encode(struct {
			OK     bool    `json:"ok"`
			Checks []check `json:"checks"`
		}{!failed, checks})
	} else {
		for _, c := range checks {
			line := fmt.Sprintf("%-5s %-12s %s", strings.ToUpper(c.Status), c.Name, c.Detail)
			if c.Fix != "" {
				line += " -- fix: " + c.Fix
			}
			fmt.Fprintln(stdout, line)
		}
	}
	if failed {
		return exitFailed
	}
	return exitOK
}

func runDoctor(ctx context.Context, cfgPath string, env doctorEnv) []check {
	var out []check
	add := func(c check) { out = append(out, c) }
	cfg, err := configs.Load(cfgPath)
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		add(check{"config", "fail", err.Error(), "edit " + cfgPath + " (the error names the field)"})
		return out // nothing else can be judged without a configuration
	}
	add(check{"config", "ok", cfgPath + " is valid", ""})
	add(checkSecrets(cfg, cfgPath))
	add(checkClock(env.now()))
	add(checkCompute(env.compute))
	for _, kind := range []string{"whisper", "vad"} {
		name := cfg.Models.Whisper
		if kind == "vad" {
			name = cfg.Models.VAD
		}
		add(checkModel(kind, name, cfg.ModelsDir()))
	}
	add(checkSpotter(cfg))
	broker := checkBroker(ctx, cfg, env.brokerWait)
	add(broker)
	if broker.Status == "ok" {
		add(checkIsolation(cfg, env.brokerWait))
	} else {
		add(check{"broker isolation", "skip", "the broker check failed", ""})
	}
	add(checkLink(ctx, cfg))
	add(checkLevels(ctx, cfg))
	add(checkDisk(cfg))
	add(checkStore(cfg))
	add(checkStorage(cfg, env.now()))
	add(checkGroups())
	// PortAudio's probing of ALSA and JACK prints dozens of lines on stderr
	// (C libraries, not our logger), which would bury the one line per check.
	quiet := quietStderr
	if env.audioNoise {
		quiet = func(f func()) { f() }
	}
	quiet(func() { add(checkMic(ctx, cfg, env)) })
	quiet(func() { add(checkSpeaker(cfg, env)) })
	add(checkPTT(ctx, cfg, env.pttWait))
	return out
}

// quietStderr runs f with file descriptor 2 on /dev/null.
func quietStderr(f func()) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		f()
		return
	}
	defer null.Close()
	saved, err := syscall.Dup(2)
	if err != nil {
		f()
		return
	}
	defer syscall.Close(saved)
	if err := syscall.Dup3(int(null.Fd()), 2, 0); err != nil {
		f()
		return
	}
	defer syscall.Dup3(saved, 2, 0)
	f()
}

// checkClock: TLS certificates and record timestamps need a sane clock; a
// device without RTC battery boots in 1970 until NTP answers.
func checkClock(now time.Time) check {
	if now.Year() < 2025 {
		return check{"clock", "fail", "system time is " + now.UTC().Format(time.RFC3339), "enable time sync (systemd-timesyncd) or set the clock: TLS and timestamps depend on it"}
	}
	return check{"clock", "ok", now.UTC().Format(time.RFC3339), ""}
}

func checkModel(kind, name, dir string) check {
	path, err := model.ResolveIn(kind, name, dir)
	if err != nil {
		return check{kind + " model", "fail", err.Error(), "agorad model fetch " + name + " --dir " + dir}
	}
	e, inCatalog := model.Lookup(name)
	inCatalog = inCatalog && e.SHA256 != ""
	// A SHA256SUMS line beside the file vouches for it whatever its name:
	// imported models (agorad model import, make models) are not the
	// catalog's files, and a name merely shaped like a catalog one
	// (base-q8_0 beside base-q5_1) must not skip the check.
	listed, hasListed := listedSum(filepath.Join(filepath.Dir(path), "SHA256SUMS"), filepath.Base(path))
	if !inCatalog && !hasListed {
		return check{kind + " model", "ok", path + " (not in the catalog and no SHA256SUMS line beside it: checksum not checked)", ""}
	}
	sum, err := model.FileSHA256(path)
	if err != nil {
		return check{kind + " model", "fail", fmt.Sprintf("read %s: %v", path, err), "check the file's permissions (readable by user agorad)"}
	}
	if hasListed {
		if strings.EqualFold(listed, sum) {
			return check{kind + " model", "ok", path + " (sha256 matches the SHA256SUMS beside it)", ""}
		}
		return check{kind + " model", "fail", fmt.Sprintf("%s: sha256 %s, SHA256SUMS beside it says %s (damaged or partial)", path, sum, listed), "copy or import the model again (make models; agorad model import)"}
	}
	if sum != e.SHA256 {
		// Catalog aliases (shared test copies) are other files: only the
		// catalog's own file name must match.
		if filepath.Base(path) == e.File {
			return check{kind + " model", "fail", fmt.Sprintf("%s: sha256 %s, catalog says %s (damaged or partial)", path, sum, e.SHA256), "delete it and run agorad model fetch " + name + " --dir " + dir}
		}
		return check{kind + " model", "warn", fmt.Sprintf("%s: not the catalog's file (sha256 differs)", path), ""}
	}
	return check{kind + " model", "ok", path + " (sha256 matches the catalog)", ""}
}

// listedSum looks name up in a sha256sum-style file.
func listedSum(sumsFile, name string) (string, bool) {
	b, err := os.ReadFile(sumsFile)
	if err != nil {
		return "", false
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && strings.TrimPrefix(f[1], "*") == name {
			return f[0], true
		}
	}
	return "", false
}

// doctorClient is the doctor's one-shot MQTT client: no reconnects, the
// configured TLS and credentials. Its error is the TLS set-up's.
func doctorClient(cfg *configs.Config, u *url.URL, useTLS bool, clientID string, wait time.Duration) (*paho.ClientOptions, error) {
	scheme := "tcp"
	if useTLS {
		scheme = "ssl"
	}
	o := paho.NewClientOptions().AddBroker(scheme + "://" + u.Host).SetClientID(clientID).
		SetAutoReconnect(false).SetConnectRetry(false).SetConnectTimeout(wait)
	if useTLS || cfg.MQTT.TLS.CAFile != "" {
		tc, err := uplink.TLSConfig(cfg.MQTT.TLS.CAFile, cfg.MQTT.TLS.CertFile, cfg.MQTT.TLS.KeyFile, u.Hostname())
		if err != nil {
			return nil, err
		}
		o.SetTLSConfig(tc)
	}
	if cfg.MQTT.Username != "" {
		o.SetUsername(cfg.MQTT.Username).SetPassword(cfg.MQTT.Password)
	}
	return o, nil
}

// checkBroker connects with the configured TLS and credentials, publishes
// one message to a test topic and disconnects.
func checkBroker(ctx context.Context, cfg *configs.Config, wait time.Duration) check {
	u, useTLS, err := uplink.ParseBrokerURL(cfg.MQTT.Broker)
	if err != nil {
		return check{"broker", "fail", "mqtt.broker " + err.Error(), "set mqtt.broker"}
	}
	o, err := doctorClient(cfg, u, useTLS, fmt.Sprintf("agorad-doctor-%s-%d", cfg.DeviceID, os.Getpid()), wait)
	if err != nil {
		return check{"broker", "fail", err.Error(), "fix mqtt.tls in the configuration"}
	}
	cli := paho.NewClient(o)
	tok := cli.Connect()
	if !tok.WaitTimeout(wait+time.Second) || tok.Error() != nil {
		err := tok.Error()
		if err == nil {
			err = errors.New("timed out")
		}
		return check{"broker", "fail", fmt.Sprintf("connect %s: %v", u.Redacted(), err),
			"check that the broker runs and is reachable, mqtt.tls.ca_file matches its certificate, and the credentials"}
	}
	defer cli.Disconnect(250)
	topic := "agora/doctor/" + cfg.DeviceID
	p := cli.Publish(topic, 1, false, []byte("agorad doctor "+time.Now().UTC().Format(time.RFC3339)))
	if !p.WaitTimeout(wait) || p.Error() != nil {
		return check{"broker", "fail", fmt.Sprintf("publish to %s: %v", topic, p.Error()), "check the broker's ACL for this client"}
	}
	return check{"broker", "ok", fmt.Sprintf("%s: connected, published to %s", u.Redacted(), topic), ""}
}

// checkDisk compares free space on the state directory's file system with
// the store's cap.
func checkDisk(cfg *configs.Config) check {
	dir := cfg.StateDir
	for {
		if _, err := os.Stat(dir); err == nil || dir == filepath.Dir(dir) {
			break
		}
		dir = filepath.Dir(dir)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return check{"disk", "fail", fmt.Sprintf("statfs %s: %v", dir, err), ""}
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	detail := fmt.Sprintf("%s: %d MiB free, store cap %d MiB", dir, free>>20, cfg.Storage.MaxBytes>>20)
	const low = 64 << 20
	if free < low {
		return check{"disk", "fail", detail, "free space on " + dir + ": new utterances are refused until there is room"}
	}
	if cfg.Storage.MaxBytes > 0 && free < cfg.Storage.MaxBytes/4 {
		return check{"disk", "warn", detail + " (less than a quarter of the cap)", "free space or lower storage.max_bytes"}
	}
	return check{"disk", "ok", detail, ""}
}

// checkSecrets warns of secrets other users can read (what run logs at
// every start): a warning, not a failure, as at run.
func checkSecrets(cfg *configs.Config, cfgPath string) check {
	if w := cfg.SecretWarnings(cfgPath); len(w) > 0 {
		return check{"secrets", "warn", strings.Join(w, "; "), "chmod 600 the files named (or use systemd credentials)"}
	}
	return check{"secrets", "ok", "no secret readable by other users", ""}
}

// checkStore runs the store's integrity check (what `agorad store check`
// does: every file, key, value and checksum, on a working copy, so it also
// runs beside the daemon and never changes the store).
func checkStore(cfg *configs.Config) check {
	dir := filepath.Join(cfg.StateDir, "store")
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return check{"store", "ok", dir + " not created yet (first start creates it)", ""}
	}
	var key []byte
	if cfg.Storage.EncryptionKeyFile != "" {
		var err error
		if key, err = buffer.ReadKeyFile(cfg.Storage.EncryptionKeyFile); err != nil {
			return check{"store", "fail", "storage.encryption_key_file: " + err.Error(), "restore the key file (the store cannot be read without it)"}
		}
	}
	r, err := buffer.Check(dir, buffer.CheckOptions{EncryptionKey: key})
	if err != nil {
		return check{"store", "fail", err.Error(), "agorad store check -c FILE names what is wrong; see docs/storage.md (recovery)"}
	}
	if r.Damaged() {
		var what []string
		what = append(what, r.Files...)
		what = append(what, r.Unreadable...)
		for _, s := range []string{r.Identity, r.RolledBack} {
			if s != "" {
				what = append(what, s)
			}
		}
		return check{"store", "fail", fmt.Sprintf("%s is damaged: %s", dir, strings.Join(what, "; ")),
			"agorad store salvage --to NEWDIR copies what is readable into a new store (docs/storage.md)"}
	}
	return check{"store", "ok", fmt.Sprintf("%s intact: %d buffered, %d outbox, %d journaled audio", dir, r.Listen, r.Outbox, r.Journal), ""}
}

// checkGroups: agoractl needs group agorad (the socket is 0660), the
// microphone and push-to-talk key need audio and input.
func checkGroups() check {
	u, err := user.Current()
	if err != nil {
		return check{"groups", "warn", err.Error(), ""}
	}
	ids, _ := u.GroupIds()
	have := map[string]bool{}
	for _, id := range ids {
		if g, err := user.LookupGroupId(id); err == nil {
			have[g.Name] = true
		}
	}
	var missing []string
	for _, g := range []string{"agorad", "audio", "input"} {
		if !have[g] {
			missing = append(missing, g)
		}
	}
	if len(missing) == 0 || u.Uid == "0" {
		return check{"groups", "ok", u.Username + " may use agoractl, the microphone and the key", ""}
	}
	return check{"groups", "warn", u.Username + " is not in " + strings.Join(missing, ", "),
		"usermod -aG " + strings.Join(missing, ",") + " " + u.Username + " (then log in again)"}
}

// checkMic opens the configured input for half a second and reports its level.
func checkMic(ctx context.Context, cfg *configs.Config, env doctorEnv) check {
	src := cfg.Input.Source
	if src == "none" || strings.HasSuffix(strings.ToLower(src), ".wav") {
		return check{"microphone", "skip", "input.source is " + src, ""}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	mic, err := env.openMic(ctx, src)
	if err != nil {
		return check{"microphone", "fail", fmt.Sprintf("open %q: %v", src, err), "agorad devices lists the inputs; check input.source and membership of group audio"}
	}
	defer mic.Close()
	var sum float64
	var n int
	for n < audio.SampleRate/2 {
		c, err := mic.Read(ctx)
		if err != nil {
			if n == 0 {
				return check{"microphone", "fail", fmt.Sprintf("read %q: %v", src, err), "check the device and its cable"}
			}
			break
		}
		for _, s := range c.Samples {
			sum += float64(s) * float64(s)
		}
		n += len(c.Samples)
	}
	db := 10 * math.Log10(sum/float64(max(n, 1))+1e-12)
	detail := fmt.Sprintf("%q: level %.0f dBFS over %.1f s", src, db, float64(n)/audio.SampleRate)
	if db < -80 {
		return check{"microphone", "warn", detail + " (silent)", "unmute the input (alsamixer) or check the microphone"}
	}
	return check{"microphone", "ok", detail, ""}
}

// checkSpeaker opens the playback device the earcons and replies use.
func checkSpeaker(cfg *configs.Config, env doctorEnv) check {
	if !cfg.Sounds.Enabled && !cfg.Replies.Enabled {
		return check{"speaker", "skip", "sounds and replies are off", ""}
	}
	dev := cfg.Sounds.Device
	if err := env.openSpeaker(dev); err != nil {
		return check{"speaker", "fail", fmt.Sprintf("open %q: %v", dev, err), "agorad devices lists the outputs; check sounds.device and membership of group audio"}
	}
	return check{"speaker", "ok", fmt.Sprintf("%q opens", dev), ""}
}

// checkPTT opens the push-to-talk device; with wait > 0 it waits that long
// for the technician to press the configured key.
func checkPTT(ctx context.Context, cfg *configs.Config, wait time.Duration) check {
	p := cfg.Input.PTT
	if !p.Enabled || p.EvdevDevice == "" {
		return check{"push-to-talk", "skip", "no evdev key configured", ""}
	}
	f, err := os.Open(p.EvdevDevice)
	if err != nil {
		return check{"push-to-talk", "fail", err.Error(), "check input.ptt.evdev_device and membership of group input"}
	}
	f.Close()
	if wait <= 0 {
		return check{"push-to-talk", "ok", fmt.Sprintf("%s readable; key %d not tested (agorad doctor --ptt-wait 10s, then press it)", p.EvdevDevice, p.KeyCode), ""}
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	seen := false
	err = evdev.Watch(ctx, p.EvdevDevice, evdev.Options{Code: uint16(p.KeyCode), Logger: slog.New(slog.DiscardHandler)}, func(e evdev.Event) {
		if e.Down {
			seen = true
			cancel()
		}
	})
	switch {
	case seen:
		return check{"push-to-talk", "ok", fmt.Sprintf("%s: key %d seen", p.EvdevDevice, p.KeyCode), ""}
	case err != nil:
		return check{"push-to-talk", "fail", err.Error(), "check input.ptt.evdev_device and membership of group input"}
	}
	return check{"push-to-talk", "fail", fmt.Sprintf("%s: key %d not pressed within %s", p.EvdevDevice, p.KeyCode, wait),
		"check input.ptt.key_code (evtest " + p.EvdevDevice + " shows the code the key sends) or the device"}
}
