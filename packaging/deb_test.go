package packaging

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agora/agorad/audio/testaudio"
)

// TestDebModels builds the packages as the README says (make deb
// MODELS=...), installs agorad-models' files into a root of their own and
// runs the real agorad doctor on them: intact, each check passes naming
// the SHA256SUMS; with one byte of a file changed, the check of that file
// fails. Then what the packaging must refuse.
func TestDebModels(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the Debian packages (make deb MODELS=...)")
	}
	for _, tool := range []string{"make", "dpkg-deb", "dpkg", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found (make deps installs it): %v", tool, err)
		}
	}
	tiny := testaudio.RealModel(t, "tiny.en-q8_0")
	testaudio.SpotterDir(t)
	root := testaudio.RepoRoot()
	arch := strings.TrimSpace(run(t, root, nil, "dpkg", "--print-architecture"))
	version := strings.TrimSpace(run(t, root, nil, "sh", "scripts/version.sh"))

	// The shipped configuration, naming the small model so the package
	// stays small (the shipped one names base: make deb MODELS=1 carries it).
	shipped, err := os.ReadFile(filepath.Join(root, "configs", "agorad.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pkgCfg := filepath.Join(t.TempDir(), "agorad.yaml")
	writeFile(t, pkgCfg, replace(t, string(shipped), "\n  whisper: base\n", "\n  whisper: tiny.en-q8_0\n"))
	run(t, root, []string{"CONFIG=" + pkgCfg}, "make", "--no-print-directory", "deb", "MODELS=tiny.en-q8_0")

	t.Run("agorad ships the docs and a true postinst", func(t *testing.T) {
		deb := filepath.Join(root, "build", "deb", "agorad_"+version+"_"+arch+".deb")
		list := run(t, root, nil, "dpkg-deb", "-c", deb)
		docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
		if len(docs) == 0 {
			t.Fatal("no docs/*.md")
		}
		for _, d := range append(docs, filepath.Join(root, "README.md")) {
			if want := "./usr/share/doc/agorad/" + filepath.Base(d); !strings.Contains(list, want+"\n") {
				t.Errorf("%s does not ship %s", filepath.Base(deb), want)
			}
		}
		ctl := t.TempDir()
		run(t, root, nil, "dpkg-deb", "-e", deb, ctl)
		post, err := os.ReadFile(filepath.Join(ctl, "postinst"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(post), "placeholder") || !strings.Contains(string(post), "NOT started") {
			t.Errorf("postinst calls the working shipped configuration a placeholder, or no longer says it did not start it:\n%s", post)
		}
	})

	deb := filepath.Join(root, "build", "deb", "agorad-models_"+version+"_"+arch+".deb")
	inst := t.TempDir()
	run(t, root, nil, "dpkg-deb", "-x", deb, inst)
	dir := filepath.Join(inst, "usr", "share", "agorad", "models")

	t.Run("files and their SHA256SUMS", func(t *testing.T) {
		sums := readSums(t, filepath.Join(dir, "SHA256SUMS"))
		kwsSums := readSums(t, filepath.Join(dir, "kws", "SHA256SUMS"))
		for _, want := range []struct {
			sums map[string]string
			file string
		}{
			{sums, "ggml-tiny.en-q8_0.bin"}, {sums, "ggml-silero-v6.2.0.bin"},
			{kwsSums, "libtensorflowlite_c.so"}, {kwsSums, "melspectrogram.tflite"}, {kwsSums, "embedding_model.tflite"},
		} {
			if _, ok := want.sums[want.file]; !ok {
				t.Errorf("SHA256SUMS has no line for %s: %v", want.file, want.sums)
			}
		}
		for _, s := range []struct {
			dir  string
			sums map[string]string
		}{{dir, sums}, {filepath.Join(dir, "kws"), kwsSums}} {
			for f, want := range s.sums {
				if got := sha256File(t, filepath.Join(s.dir, f)); got != want {
					t.Errorf("%s: sha256 %s, its SHA256SUMS says %s", f, got, want)
				}
			}
		}
		// The packaged model is the one make models imported.
		imported := readSums(t, filepath.Join(filepath.Dir(tiny), "SHA256SUMS"))
		if sums["ggml-tiny.en-q8_0.bin"] != imported["ggml-tiny.en-q8_0.bin"] {
			t.Errorf("packaged tiny.en-q8_0 %s, imported %s", sums["ggml-tiny.en-q8_0.bin"], imported["ggml-tiny.en-q8_0.bin"])
		}
	})

	// agorad doctor on the installed files, as the default configuration
	// finds them, but with models.dir pointing into the root.
	state := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "agorad.yaml")
	c := replace(t, string(shipped), "\n  whisper: base\n", "\n  whisper: tiny.en-q8_0\n")
	c = replace(t, c, "\n  dir: \"\"\n", "\n  dir: "+dir+"\n")
	c = replace(t, c, "\nstate_dir: /var/lib/agorad\n", "\nstate_dir: "+state+"\n")
	c = replace(t, c, "\n  source: default\n", "\n  source: none\n")
	c = replace(t, c, "\n  spotter: auto\n", "\n  spotter: on\n")
	writeFile(t, cfg, c)
	agorad := filepath.Join(root, "build", "bin", "agorad")
	checks := []string{"whisper model", "vad model", "spotter"}
	t.Run("doctor passes the intact files", func(t *testing.T) {
		got := doctor(t, agorad, cfg)
		for _, name := range checks {
			if c := got[name]; c.Status != "ok" || !strings.Contains(c.Detail, "SHA256SUMS") || !strings.Contains(c.Detail, dir) {
				t.Errorf("%s: %+v, want ok against the SHA256SUMS in %s", name, c, dir)
			}
		}
	})
	for _, tc := range []struct{ check, file string }{
		{"whisper model", "ggml-tiny.en-q8_0.bin"},
		{"vad model", "ggml-silero-v6.2.0.bin"},
		{"spotter", "kws/melspectrogram.tflite"},
		{"spotter", "kws/libtensorflowlite_c.so"},
	} {
		t.Run("doctor fails a damaged "+tc.file, func(t *testing.T) {
			path := filepath.Join(dir, tc.file)
			flipByte(t, path)
			defer flipByte(t, path)
			got := doctor(t, agorad, cfg)
			for _, name := range checks {
				want := "ok"
				if name == tc.check {
					want = "fail"
				}
				if c := got[name]; c.Status != want || (want == "fail" && (!strings.Contains(c.Detail, path) || c.Fix == "")) {
					t.Errorf("%s: %+v, want %s (naming %s, with a fix)", name, c, want, path)
				}
			}
		})
	}

	// What make deb MODELS=... must refuse to package.
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "ggml-x.bin"), "not a model\n")
	xSum := sha256File(t, filepath.Join(src, "ggml-x.bin"))
	kwsLib := filepath.Join(testaudio.SpotterDir(t), "libtensorflowlite_c.so")
	otherArch := map[string]string{"amd64": "arm64", "arm64": "amd64"}[arch]
	for _, tc := range []struct {
		name, sums string
		kws        bool   // a (real) spotter front end in SRC/kws
		arch, want string // the package's architecture; what the error says
	}{
		{"damaged model", strings.Repeat("0", 64) + "  ggml-x.bin\n", false, arch, "damaged"},
		{"model without a SHA256SUMS line", xSum + "  ggml-y.bin\n", false, arch, "has no line"},
		{"no spotter front end", xSum + "  ggml-x.bin\n", false, arch, "kws/libtensorflowlite_c.so missing"},
		{"spotter library of another architecture", xSum + "  ggml-x.bin\n", true, otherArch, "not " + otherArch},
	} {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			writeFile(t, filepath.Join(src, "SHA256SUMS"), tc.sums)
			os.RemoveAll(filepath.Join(src, "kws"))
			if tc.kws {
				os.MkdirAll(filepath.Join(src, "kws"), 0o755)
				for _, f := range []string{"libtensorflowlite_c.so", "melspectrogram.tflite", "embedding_model.tflite"} {
					copyFile(t, filepath.Join(filepath.Dir(kwsLib), f), filepath.Join(src, "kws", f))
				}
			}
			xCfg := filepath.Join(t.TempDir(), "x.yaml")
			writeFile(t, xCfg, "models:\n  whisper: x\n  vad: silero-v6.2.0\n")
			stage := filepath.Join(t.TempDir(), "stage")
			cmd := exec.Command("bash", "scripts/deb-models.sh", stage)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "MODELS=x", "SRC="+src, "CONFIG="+xCfg, "ARCH="+tc.arch, "AGORAD="+agorad)
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.want) {
				t.Errorf("deb-models.sh: %v, want a failure saying %q:\n%s", err, tc.want, out)
			}
		})
	}
}

type check struct {
	Name, Status, Detail, Fix string
}

// doctor runs agorad doctor --json from an empty directory (no ./models,
// no ../shared/models to find other copies in) and returns its checks.
func doctor(t *testing.T, agorad, cfg string) map[string]check {
	t.Helper()
	cmd := exec.Command(agorad, "doctor", "-c", cfg, "--json")
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("agorad doctor: %v", err)
	}
	var r struct{ Checks []check }
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("agorad doctor --json: %v\n%s\n%s", err, out, stderr.String())
	}
	m := map[string]check{}
	for _, c := range r.Checks {
		m[c.Name] = c
	}
	return m
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, tail(stderr.String()))
	}
	return string(out)
}

func tail(s string) string {
	if len(s) > 4000 {
		return "..." + s[len(s)-4000:]
	}
	return s
}

func replace(t *testing.T, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		_, file, line, _ := runtime.Caller(1)
		t.Fatalf("%s:%d: configs/agorad.yaml has no %q", file, line, old)
	}
	return strings.Replace(s, old, new, 1)
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, string(b))
}

func readSums(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			m[strings.TrimPrefix(f[1], "*")] = f[0]
		}
	}
	return m
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// flipByte inverts one byte in the middle of a file (twice restores it).
func flipByte(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	off := st.Size() / 2
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}
