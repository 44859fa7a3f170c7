package buffer

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
)

// dropEmptyLogs removes zero-byte write-ahead (.mem) and value-log (.vlog)
// files before Badger opens the directory. Badger creates such a file and
// then sizes it; a kill or power cut between the two leaves it empty, and
// Badger's Open then fails on it for good with "Create a new file"
// (dgraph-io/badger#2207, seen in TestKill9). An empty file holds no entry,
// so removing it loses nothing. The returned files no longer name them.
func dropEmptyLogs(dir string, files storeFiles, log *slog.Logger) (storeFiles, error) {
	keep := func(paths []string) ([]string, error) {
		var out []string
		for _, p := range paths {
			fi, err := os.Stat(p)
			if err != nil {
				return nil, fmt.Errorf("look at %s: %w", filepath.Base(p), err)
			}
			if fi.Size() > 0 {
				out = append(out, p)
				continue
			}
			if err := os.Remove(p); err != nil {
				return nil, fmt.Errorf("remove the empty %s (left by a crash while it was being created): %w", filepath.Base(p), err)
			}
			log.Warn("removed an empty store file left by a crash while it was being created (it held nothing)", "file", p)
		}
		return out, nil
	}
	mems, err := keep(files.mems)
	if err != nil {
		return files, err
	}
	vlogs, err := keep(files.vlogs)
	if err != nil {
		return files, err
	}
	if len(mems) != len(files.mems) || len(vlogs) != len(files.vlogs) {
		if err := syncDir(dir); err != nil {
			return files, fmt.Errorf("sync %s after removing empty files: %w", dir, err)
		}
	}
	files.mems, files.vlogs = mems, vlogs
	return files, nil
}
