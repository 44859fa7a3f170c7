package main

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/buffer/health"
	"github.com/agora/agorad/configs"
)

// checkStorage runs the running daemon's storage probe once (buffer/health:
// the state directory and its identity file are there, the file system has
// room and takes a write and an fsync): a card remounted read-only after an
// error, I/O errors or a full disk are named with the fix.
func checkStorage(cfg *configs.Config, now time.Time) check {
	dir := filepath.Join(cfg.StateDir, "store")
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(cfg.StateDir); errors.Is(err, os.ErrNotExist) {
			return check{"storage", "ok", cfg.StateDir + " not created yet (first start creates it)", ""}
		}
		dir = "" // no store yet: probe the state directory alone
	}
	ident := ""
	if dir != "" {
		if p := buffer.IdentityPath(dir); fileExists(p) {
			ident = p
		}
	}
	probeDir := cfg.StateDir
	target := dir
	if target == "" {
		target = cfg.StateDir
	}
	err := health.Probe(target, ident, probeDir, health.FileID{})
	if err == nil {
		return check{"storage", "ok", cfg.StateDir + " is writable (write and fsync of a probe file)", ""}
	}
	kind, ok := health.Classify(err)
	if !ok {
		kind = health.Write
	}
	what, fix := health.State{Phase: health.Failed, Kind: kind, Since: now, Err: err.Error()}.Describe(cfg.StateDir)
	return check{"storage", "fail", what, fix}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
