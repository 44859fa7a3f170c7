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
//
// The cleanups run after the tests, before the process exits: for what a
// package's tests share and make once (a binary built, a template store).
func Main(m *testing.M, cleanups ...func()) {
	if err := audio.ReexecForPortAudio(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	code := m.Run()
	for _, c := range cleanups {
		c()
	}
	os.Exit(code)
}
