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

// modelDirs are searched, in order, for a model given by name: the working
// directory's models/, then the shared test material beside a checkout.
var modelDirs = []string{"models", filepath.Join("..", "shared", "models")}

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
	return resolveIn(kind, name, modelDirs)
}

// ResolveIn finds a model by name (or path) in dirs first, then in the
// default places (./models, ../shared/models). Empty dirs are skipped.
func ResolveIn(kind, name string, dirs ...string) (string, error) {
	if kind != "whisper" && kind != "vad" {
		return "", fmt.Errorf("resolve model: unknown kind %q (want whisper or vad)", kind)
	}
	var first []string
	for _, d := range dirs {
		if d = strings.TrimSpace(d); d != "" {
			first = append(first, d)
		}
	}
	return resolveIn(kind, name, append(first, modelDirs...))
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
		if e, ok := Lookup(name); ok && e.Kind == kind {
			for _, f := range append([]string{e.File}, e.Aliases...) {
				if f != name {
					files = append(files, f)
				}
			}
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
