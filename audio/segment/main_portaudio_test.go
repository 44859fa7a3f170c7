package segment_test

import (
	"testing"

	"github.com/agora/agorad/audio/testaudio"
)

// TestMain: these tests open PortAudio streams (see testaudio.Main).
func TestMain(m *testing.M) { testaudio.Main(m) }
