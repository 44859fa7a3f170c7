package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/transcribe/model"
	"github.com/agora/agorad/wake/kws"
)

// checkSpotter: the keyword spotter hears the name whisper mishears; a
// device without its front end wakes only on what whisper writes. Opening
// it runs the TensorFlow Lite library and both feature models once.
func checkSpotter(cfg *configs.Config) check {
	mode := cfg.Wake.SpotterMode()
	if mode == "off" {
		return check{"spotter", "ok", "off (wake.spotter): the name is found in whisper's text alone", ""}
	}
	dirs := model.Dirs(cfg.ModelsDir())
	sums := ""
	if dir, err := kws.Find(dirs...); err == nil {
		listed, bad := damagedFiles(dir)
		if bad != "" {
			return check{"spotter", "fail", bad, "install the front end again (make models; the agorad-models package)"}
		}
		if listed > 0 {
			sums = fmt.Sprintf("; %s: %d files match the SHA256SUMS beside them", dir, listed)
		}
	}
	s, err := kws.OpenDefault(cfg.Wake.SpotterThreshold, dirs...)
	if err != nil {
		status := "warn"
		if mode == "on" {
			status = "fail"
		}
		return check{"spotter", status, err.Error(), "make models (or install the package's models/kws), or set wake.spotter: off"}
	}
	defer s.Close()
	return check{"spotter", "ok", fmt.Sprintf("keyword spotter ready (threshold %.2f, %s kernels)%s", s.Threshold(), s.Kernels(), sums), ""}
}

// damagedFiles checks the files a SHA256SUMS in dir lists (the
// agorad-models package writes one beside the spotter's front end; a
// checkout's models/kws may have none) and names those that do not match
// or cannot be read ("" when all match or there is no list), and how many
// it lists.
func damagedFiles(dir string) (listed int, bad string) {
	b, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		return 0, ""
	}
	var damaged []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		listed++
		path := filepath.Join(dir, strings.TrimPrefix(f[1], "*"))
		sum, err := model.FileSHA256(path)
		switch {
		case err != nil:
			damaged = append(damaged, fmt.Sprintf("read %s: %v", path, err))
		case !strings.EqualFold(sum, f[0]):
			damaged = append(damaged, fmt.Sprintf("%s: sha256 %s, SHA256SUMS beside it says %s (damaged or partial)", path, sum, f[0]))
		}
	}
	return listed, strings.Join(damaged, "; ")
}
