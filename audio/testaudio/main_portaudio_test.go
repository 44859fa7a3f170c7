package testaudio

import "testing"

// TestMain: these tests open PortAudio streams (see Main).
func TestMain(m *testing.M) { Main(m) }
