package testaudio

import (
	"fmt"
	"os"
	"testing"

	"github.com/agora/agorad/audio"
)

// Main is TestMain for packages whose tests open PortAudio streams: it
// re-executes the test binary with GODEBUG=invalidptr=0 (the binding can
// otherwise abort the process; see audio.ReexecForPortAudio), then runs the
// tests.
func Main(m *testing.M) {
	if err := audio.ReexecForPortAudio(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(m.Run())
}
