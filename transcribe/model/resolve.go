package model

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// devModelDirs are a checkout's places, relative to the working directory:
// its models/, then the shared test material beside it. They are searched
// only where they exist, as absolute paths: under systemd the working
// directory is /, and /models means nothing there.
var devModelDirs = []string{"models", filepath.Join("..", "shared", "models")}

// systemModelDirs are an installed device's places: the service's state
// (where `agorad model fetch` puts models) and the package's shared data.
var systemModelDirs = []string{"/var/lib/agorad/models", "/usr/share/agorad/models"}

// defaultModelDirs lists the default search places, all absolute.
func defaultModelDirs() []string {
	var dirs []string
	for _, d := range devModelDirs {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			if abs, err := filepath.Abs(d); err == nil {
				dirs = append(dirs, abs)
			}
		}
	}
	return append(dirs, systemModelDirs...)
}

// Resolve finds the file of a model. kind is "whisper" or "vad"; name
// is a catalog name ("base.en"), a file name ("ggml-base.en.bin") or a
// path; configuredPath, when set, is the only place looked (an explicit
// setting is never silently replaced by another file). The error says which
// model, every place looked, and how to get it.
func Resolve(kind, name, configuredPath string) (string, error) {
	if kind != "whisper" && kind != "vad" {
		return "", fmt.Errorf("resolve model: unknown kind %q (want whisper or vad)", kind)
	}
	if configuredPath != "" {
		if err := usableFile(configuredPath); err != nil {
			return "", fmt.Errorf("%s model %s: %w", kind, configuredPath, err)
		}
		return configuredPath, nil
	}
	return resolveIn(kind, name, defaultModelDirs())
}

// ResolveIn finds a model by name (or path) in dirs first, then in the
// default places (./models and ../shared/models where they exist, then
// /var/lib/agorad/models, /usr/share/agorad/models). Empty dirs are skipped.
func ResolveIn(kind, name string, dirs ...string) (string, error) {
	if kind != "whisper" && kind != "vad" {
		return "", fmt.Errorf("resolve model: unknown kind %q (want whisper or vad)", kind)
	}
	var uniq []string
	seen := map[string]bool{}
	for _, d := range append(dirs, defaultModelDirs()...) {
		if d = strings.TrimSpace(d); d != "" && !seen[filepath.Clean(d)] {
			seen[filepath.Clean(d)] = true
			uniq = append(uniq, d)
		}
	}
	return resolveIn(kind, name, uniq)
}

func resolveIn(kind, name string, dirs []string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%s model: neither a name nor a path is configured", kind)
	}
	var candidates []string
	if strings.ContainsRune(name, filepath.Separator) {
		candidates = append(candidates, name)
	} else {
		files := []string{name}
		e, inCatalog := Lookup(name)
		if inCatalog && e.Kind == kind {
			for _, f := range append([]string{e.File}, e.Aliases...) {
				if f != name {
					files = append(files, f)
				}
			}
		} else if !inCatalog && !strings.HasSuffix(name, ".bin") {
			// A model outside the catalog under whisper.cpp's naming, as
			// `make models` imports them: "base-q8_0" is ggml-base-q8_0.bin.
			files = append(files, "ggml-"+name+".bin")
		}
		for _, dir := range dirs {
			for _, f := range files {
				candidates = append(candidates, filepath.Join(dir, f))
			}
		}
	}
	for _, c := range candidates {
		if usableFile(c) == nil {
			return c, nil
		}
	}
	looked := make([]string, len(candidates))
	for i, c := range candidates {
		abs, err := filepath.Abs(c)
		if err != nil {
			abs = c
		}
		looked[i] = abs
	}
	how := fmt.Sprintf("get it with `agorad model fetch %s`", name)
	if e, ok := Lookup(name); !ok || e.Kind != kind {
		how = fmt.Sprintf("%q is not in the model catalog; known %s models: %s (get one with `agorad model fetch NAME`)",
			name, kind, strings.Join(catalogNames(kind), ", "))
	}
	return "", fmt.Errorf("%s model %q not found; looked in %s; %s", kind, name, strings.Join(looked, ", "), how)
}

// usableFile reports why path cannot be used as a model file, or nil.
func usableFile(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return errors.New("no such file")
		}
		return err
	}
	if st.IsDir() {
		return errors.New("is a directory, want a model file")
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return f.Close()
}

// catalogNames lists the catalog's model names of a kind ("" for all).
func catalogNames(kind string) []string {
	var names []string
	for _, e := range Catalog {
		if kind == "" || e.Kind == kind {
			names = append(names, e.Name)
		}
	}
	sort.Strings(names)
	return names
}

// Dirs is where models are looked for: the non-empty dirs given, then the
// default places (as ResolveIn searches). For models kept in a directory of
// their own, such as the keyword spotter's front end (wake/kws).
func Dirs(dirs ...string) []string {
	var out []string
	for _, d := range dirs {
		if d != "" {
			out = append(out, d)
		}
	}
	return append(out, defaultModelDirs()...)
}
