package bridge

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// DeadLetterDir is where a mosquitto-mode bridge also keeps each dead letter
// as a file: readable while the bridge holds its database.
func DeadLetterDir(stateDir string) string { return filepath.Join(stateDir, "deadletters") }

// writeDeadLetterFile writes dl atomically (temp file, fsync, rename).
func writeDeadLetterFile(stateDir string, dl *DeadLetter) error {
	dir := DeadLetterDir(stateDir)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("dead letter file: %w", err)
	}
	b, err := json.Marshal(dl)
	if err != nil {
		return fmt.Errorf("dead letter file: %w", err)
	}
	name := deadLetterFileName(dl.DeviceID, dl.ID)
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("dead letter file: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("dead letter file %s: %w", name, err)
	}
	return nil
}

// maxDeadLetterName bounds a dead letter's file name, well under the 255
// bytes of common file systems.
const maxDeadLetterName = 160

// deadLetterFileName is <hex device>_<id>.json (device ids may hold '.',
// ids may not hold '/': hex keeps names flat), or, when that would be
// longer than maxDeadLetterName (a 64-byte device id and a 128-character
// id make 262 bytes), "h_" and a hash of both: the listing reads the device
// and id from the content.
func deadLetterFileName(device, id string) string {
	name := hex.EncodeToString([]byte(device)) + "_" + id + ".json"
	if len(name) <= maxDeadLetterName {
		return name
	}
	sum := sha256.Sum256([]byte(device + "/" + id))
	return "h_" + hex.EncodeToString(sum[:20]) + ".json"
}

// ReadDeadLetterFiles lists up to limit (all when <= 0) dead letters kept as
// files under stateDir, oldest first.
func ReadDeadLetterFiles(stateDir string, limit int) ([]DeadLetter, error) {
	ents, err := os.ReadDir(DeadLetterDir(stateDir))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read dead letters: %w", err)
	}
	var out []DeadLetter
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(DeadLetterDir(stateDir), e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read dead letter %s: %w", e.Name(), err)
		}
		var dl DeadLetter
		if err := json.Unmarshal(b, &dl); err != nil {
			return nil, fmt.Errorf("read dead letter %s: %w", e.Name(), err)
		}
		out = append(out, dl)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
