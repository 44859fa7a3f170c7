package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/cmd/agorad/internal/evdev"
	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/configs/configtest"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/transcribe/model"
	"gopkg.in/yaml.v3"
)

// TestDoctor runs `agorad doctor --json` against a working set-up and
// against broken ones: each breaks exactly the check it names, and the exit
// code says something is wrong.
func TestDoctor(t *testing.T) {
	broker, pw := securedBroker(t, "dev-doctor") // the shipped ACL: the isolation check passes
	down := brokertest.Start(t)
	down.Stop()
	tests := []struct {
		name   string
		mutate func(t *testing.T, c *configs.Config)
		env    func(e *doctorEnv)
		failed string // the check that must fail ("" = none)
		detail string // "check: text" its detail must contain ("" = not checked)
	}{
		{"healthy", nil, nil, "", "compute: ggml CPU backend from "},
		{"no CPU backend", nil, func(e *doctorEnv) {
			e.compute = func() (computeInfo, error) {
				return computeInfo{}, errors.New("ggml: no compute backend found in /usr/lib/agorad")
			}
		}, "compute", "compute: no compute backend found"},
		{"missing model", func(t *testing.T, c *configs.Config) { c.Models.Whisper = filepath.Join(t.TempDir(), "gone.bin") }, nil, "whisper model", "whisper model: gone.bin"},
		// A name shaped like a catalog one (base-q8_0 beside base-q5_1),
		// imported and then damaged: the SHA256SUMS beside it decides.
		{"damaged imported model", func(t *testing.T, c *configs.Config) {
			c.Models.Dir, c.Models.Whisper = damagedImport(t, "base-q8_0"), "base-q8_0"
		}, nil, "whisper model", "whisper model: SHA256SUMS beside it says"},
		{"broker down", func(t *testing.T, c *configs.Config) { c.MQTT.Broker = down.URL() }, nil, "broker", "broker: connect"},
		{"unusable CA file", func(t *testing.T, c *configs.Config) {
			ca := filepath.Join(t.TempDir(), "ca.pem")
			os.WriteFile(ca, []byte("not a certificate\n"), 0o644)
			c.MQTT.Broker = strings.Replace(broker.URL(), "tcp://", "ssl://", 1)
			c.MQTT.TLS.CAFile = ca
		}, nil, "broker", ""},
		{"unreadable input device", func(t *testing.T, c *configs.Config) { c.Input.Source = "default" },
			func(e *doctorEnv) {
				e.openMic = func(context.Context, string) (audio.Source, error) {
					return nil, errors.New("open /dev/snd/pcmC0D0c: permission denied")
				}
			}, "microphone", "microphone: permission denied"},
		{"unreadable push-to-talk device", func(t *testing.T, c *configs.Config) {
			c.Input.PTT.Enabled = true
			c.Input.PTT.EvdevDevice = filepath.Join(t.TempDir(), "event-gone")
		}, nil, "push-to-talk", "push-to-talk: event-gone"},
		{"speaker does not open", func(t *testing.T, c *configs.Config) { c.Sounds.Enabled = true },
			func(e *doctorEnv) {
				e.openSpeaker = func(string) error { return errors.New("open playback device: Device unavailable") }
			}, "speaker", "speaker: Device unavailable"},
		{"push-to-talk key never pressed", func(t *testing.T, c *configs.Config) {
			c.Input.PTT.Enabled = true
			c.Input.PTT.EvdevDevice = keyDevice(t, nil)
		}, func(e *doctorEnv) { e.pttWait = 300 * time.Millisecond }, "push-to-talk", "push-to-talk: key 164 not pressed within 300ms"},
		{"push-to-talk key pressed", func(t *testing.T, c *configs.Config) {
			c.Input.PTT.Enabled = true
			c.Input.PTT.EvdevDevice = keyDevice(t, []evdev.RawEvent{
				{Type: evdev.EvKey, Code: 30, Value: 1}, // another key first
				{Type: evdev.EvKey, Code: uint16(c.Input.PTT.KeyCode), Value: 1},
				{Type: evdev.EvSyn, Code: evdev.SynReport},
			})
		}, func(e *doctorEnv) { e.pttWait = 5 * time.Second }, "", "push-to-talk: key 164 seen"},
		{"world-readable encryption key", func(t *testing.T, c *configs.Config) {
			key := filepath.Join(t.TempDir(), "store.key")
			os.WriteFile(key, []byte(strings.Repeat("ab", 32)+"\n"), 0o644)
			c.Storage.EncryptionKeyFile = key
		}, nil, "", "secrets: storage.encryption_key_file: "},
		{"clock in 1970", nil, func(e *doctorEnv) { e.now = func() time.Time { return time.Unix(0, 0) } }, "clock", "clock: 1970"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := configtest.Daemon(t, "dev-doctor", broker.URL())
			cfg.MQTT.Username, cfg.MQTT.Password = "dev-doctor", pw["dev-doctor"]
			cfg.Input.Source = "none"
			cfg.Replies.Enabled = false // no speaker unless a case asks
			if tc.mutate != nil {
				tc.mutate(t, cfg)
			}
			path := filepath.Join(t.TempDir(), "agorad.yaml")
			b, err := yaml.Marshal(cfg)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(path, b, 0o644)
			env := realDoctorEnv()
			env.brokerWait = 2 * time.Second
			if tc.env != nil {
				tc.env(&env)
			}
			got := runDoctorCase(t, cfg, env, tc.failed)
			if name, want, ok := strings.Cut(tc.detail, ": "); ok && !strings.Contains(got[name].Detail, want) {
				t.Errorf("%s: %+v, want %q in the detail", name, got[name], want)
			}
		})
	}
}

// damagedImport copies the first MiB of a real imported model (make
// models) and the SHA256SUMS beside it into a directory of its own: a
// partial copy.
func damagedImport(t *testing.T, name string) string {
	t.Helper()
	src := testaudio.RealModel(t, name)
	sums, err := os.ReadFile(filepath.Join(filepath.Dir(src), "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, 1<<20)
	if _, err := io.ReadFull(f, head); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for file, b := range map[string][]byte{filepath.Base(src): head, "SHA256SUMS": sums} {
		if err := os.WriteFile(filepath.Join(dir, file), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runDoctorCase runs `agorad doctor --json` on cfg and asserts that exactly
// the check named failed ("" = none), each failure with a fix; it returns
// the checks by name.
func runDoctorCase(t *testing.T, cfg *configs.Config, env doctorEnv, failedCheck string) map[string]check {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agorad.yaml")
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, b, 0o644)
	var out, errb bytes.Buffer
	code := cmdDoctor(context.Background(), []string{"-c", path, "--json"}, &out, &errb, env)
	var rep struct {
		OK     bool    `json:"ok"`
		Checks []check `json:"checks"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s%s", err, out.String(), errb.String())
	}
	var failed []string
	byName := map[string]check{}
	for _, c := range rep.Checks {
		byName[c.Name] = c
		if c.Status == "fail" {
			failed = append(failed, c.Name)
			if c.Fix == "" {
				t.Errorf("%s failed without a fix: %+v", c.Name, c)
			}
		}
	}
	want := []string{}
	if failedCheck != "" {
		want = []string{failedCheck}
	}
	if strings.Join(failed, ",") != strings.Join(want, ",") {
		t.Fatalf("failed checks %q, want %q\n%s", failed, want, out.String())
	}
	if (code != 0) != (failedCheck != "") || rep.OK != (failedCheck == "") {
		t.Fatalf("exit %d ok=%v with failed %q", code, rep.OK, failed)
	}
	return byName
}

// keyDevice is a FIFO standing in for /dev/input/eventN: a writer sends
// events (after the doctor opened it) and then keeps it open.
func keyDevice(t *testing.T, events []evdev.RawEvent) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "event-kbd")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0) // blocks until the doctor's watch opens it
		if err != nil {
			return
		}
		defer f.Close()
		for _, e := range events {
			e.Time = time.Now()
			f.Write(evdev.Encode(e))
		}
		<-done
	}()
	return path
}

// A broker with TLS whose certificate a valid CA did not sign: the broker
// check fails naming the certificate; the right CA passes.
func TestDoctorTLSWrongCA(t *testing.T) {
	dir := t.TempDir()
	rightCA, rightKey := newCA(t, dir, "right-ca")
	otherCA, _ := newCA(t, dir, "other-ca")
	cert, key := newServerCert(t, dir, rightCA, rightKey)
	broker := brokertest.Start(t, brokertest.WithTLS(filepath.Join(dir, "right-ca.pem"), cert, key, false))
	_ = otherCA
	for _, tc := range []struct {
		ca     string
		failed string
	}{
		{filepath.Join(dir, "right-ca.pem"), "broker isolation"}, // no ACL on this broker
		{filepath.Join(dir, "other-ca.pem"), "broker"},
	} {
		t.Run(filepath.Base(tc.ca), func(t *testing.T) {
			cfg := configtest.Daemon(t, "dev-doctor-tls", broker.URL())
			cfg.Replies.Enabled = false
			cfg.MQTT.TLS.CAFile = tc.ca
			env := realDoctorEnv()
			env.brokerWait = 2 * time.Second
			got := runDoctorCase(t, cfg, env, tc.failed)["broker"]
			if tc.failed == "broker" && !strings.Contains(got.Detail, "certificate") {
				t.Errorf("broker check does not name the certificate problem: %+v", got)
			}
		})
	}
}

func newCA(t *testing.T, dir, name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, name+".pem"), "CERTIFICATE", der)
	c, _ := x509.ParseCertificate(der)
	return c, k
}

func newServerCert(t *testing.T, dir string, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (certFile, keyFile string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key")
	writePEM(t, certFile, "CERTIFICATE", der)
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, keyFile, "EC PRIVATE KEY", kb)
	return certFile, keyFile
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A state directory on a full file system: the disk check fails with the
// fix, and the other checks still run. Needs root (a small tmpfs).
func TestDoctorFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	f, err := os.Create(filepath.Join(mnt, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill: %v", err)
			}
			break
		}
	}
	f.Close()
	cfg := securedDaemon(t, "dev-doctor-full")
	cfg.Replies.Enabled = false
	cfg.StateDir = filepath.Join(mnt, "state")
	got := runDoctorCase(t, cfg, realDoctorEnv(), "disk")["disk"]
	if !strings.Contains(got.Detail, "0 MiB free") || !strings.Contains(got.Fix, "free space") {
		t.Errorf("disk check: %+v", got)
	}
}

// The store check is the store's integrity check: a damaged table fails
// it with the salvage command as the fix.
func TestDoctorStoreDamaged(t *testing.T) {
	cfg := securedDaemon(t, "dev-doctor-store")
	cfg.Replies.Enabled = false
	dir := filepath.Join(cfg.StateDir, "store")
	s, err := buffer.Open(dir, buffer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := s.AppendListen(buffer.Record{Text: strings.Repeat("note ", 20) + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if got := runDoctorCase(t, cfg, realDoctorEnv(), "")["store"]; !strings.Contains(got.Detail, "intact: 50 buffered") {
		t.Fatalf("intact store: %+v", got)
	}
	damaged := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && (strings.HasSuffix(p, ".sst") || strings.HasSuffix(p, ".vlog")) {
			b, _ := os.ReadFile(p)
			if len(b) > 64 {
				for i := len(b) / 3; i < len(b)/3+32; i++ {
					b[i] ^= 0xff
				}
				os.WriteFile(p, b, 0o644)
				damaged++
			}
		}
		return nil
	})
	if damaged == 0 {
		t.Fatal("no table or value log to damage")
	}
	got := runDoctorCase(t, cfg, realDoctorEnv(), "store")["store"]
	if !strings.Contains(got.Fix, "salvage") {
		t.Errorf("store check: %+v", got)
	}
}

// Microphone and speaker on a real PortAudio device (ALSA's file plugin):
// the level of what the microphone hears, the speaker opens; a device that
// does not exist fails the speaker check.
func TestDoctorAudioDevices(t *testing.T) {
	tone := make([]float32, audio.SampleRate)
	for i := range tone {
		tone[i] = 0.3 * float32(math.Sin(2*math.Pi*440*float64(i)/audio.SampleRate))
	}
	testaudio.NewVirtualMic(t, tone, testaudio.DiscardPlayback())
	cfg := securedDaemon(t, "dev-doctor-audio")
	cfg.Input.Source = "default"
	cfg.Sounds.Enabled = true
	cfg.Sounds.Device = "default"
	got := runDoctorCase(t, cfg, realDoctorEnv(), "")
	if mic := got["microphone"]; mic.Status != "ok" || !strings.Contains(mic.Detail, "dBFS") {
		t.Errorf("microphone: %+v", mic)
	}
	if sp := got["speaker"]; sp.Status != "ok" {
		t.Errorf("speaker: %+v", sp)
	}
	cfg.Sounds.Device = "no-such-speaker"
	runDoctorCase(t, cfg, realDoctorEnv(), "speaker")
}

// The SHA256SUMS beside a model decides for any model it lists, in the
// catalog or not; only a model it does not list and the catalog does not
// know goes unchecked.
func TestCheckModelSums(t *testing.T) {
	const content = "not really a model\n"
	tests := []struct {
		name, model, file string
		sums              string // the SHA256SUMS line's hash ("" = no SHA256SUMS; "ok" = the file's own)
		status, detail    string
	}{
		{"imported, listed, intact", "base-q8_0", "ggml-base-q8_0.bin", "ok", "ok", "matches the SHA256SUMS"},
		{"imported, listed, damaged", "base-q8_0", "ggml-base-q8_0.bin", strings.Repeat("0", 64), "fail", "SHA256SUMS beside it says"},
		{"imported, not listed", "base-q8_0", "ggml-base-q8_0.bin", "", "ok", "checksum not checked"},
		{"catalog name, listed, damaged", "base-q5_1", "ggml-base-q5_1.bin", strings.Repeat("0", 64), "fail", "SHA256SUMS beside it says"},
		{"catalog name, not listed, damaged", "base-q5_1", "ggml-base-q5_1.bin", "", "fail", "catalog says"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tc.file)
			os.WriteFile(path, []byte(content), 0o644)
			switch tc.sums {
			case "":
			case "ok":
				sum, err := model.FileSHA256(path)
				if err != nil {
					t.Fatal(err)
				}
				os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(sum+"  "+tc.file+"\n"), 0o644)
			default:
				os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(tc.sums+"  "+tc.file+"\n"), 0o644)
			}
			got := checkModel("whisper", tc.model, dir)
			if got.Status != tc.status || !strings.Contains(got.Detail, tc.detail) {
				t.Errorf("%+v, want %s with %q", got, tc.status, tc.detail)
			}
			if got.Status == "fail" && got.Fix == "" {
				t.Errorf("failure without a fix: %+v", got)
			}
		})
	}
	// The real imported models (make models) pass against their SHA256SUMS.
	real := testaudio.RealModel(t, "base-q8_0")
	if got := checkModel("whisper", "base-q8_0", filepath.Dir(real)); got.Status != "ok" || !strings.Contains(got.Detail, "SHA256SUMS") {
		t.Errorf("real base-q8_0: %+v", got)
	}
}
