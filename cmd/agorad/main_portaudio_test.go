package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agora/agorad/audio/testaudio"
)

// TestMain: these tests open PortAudio streams (see testaudio.Main); the
// binaries some of them build once are removed after them.
func TestMain(m *testing.M) { testaudio.Main(m, removeBinaries) }

// removeBinaries removes the agorad and agoractl the tests built, if they
// did (35 MB left in /tmp by every run otherwise).
func removeBinaries() {
	for _, p := range []string{agoradPath, agoractlPath} {
		if p != "" {
			os.RemoveAll(filepath.Dir(p))
		}
	}
}
