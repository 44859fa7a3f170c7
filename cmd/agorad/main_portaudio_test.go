package main

import (
	"testing"

	"github.com/agora/agorad/audio/testaudio"
)

// TestMain: these tests open PortAudio streams (see testaudio.Main); the
// binaries some of them build once are removed after them.
func TestMain(m *testing.M) { testaudio.Main(m, removeBinaries) }
