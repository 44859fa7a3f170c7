package audio_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/testaudio"
)

// TestMain: these tests open PortAudio streams (see testaudio.Main).
func TestMain(m *testing.M) { testaudio.Main(m) }

// The test binary re-executed itself with the binding's crash check off,
// keeping whatever GODEBUG it was started with.
func TestReexecForPortAudio(t *testing.T) {
	got := strings.Split(os.Getenv("GODEBUG"), ",")
	if !slices.Contains(got, "invalidptr=0") {
		t.Fatalf("GODEBUG=%q in the test process, want invalidptr=0 added by ReexecForPortAudio", os.Getenv("GODEBUG"))
	}
	if err := audio.ReexecForPortAudio(); err != nil { // already set: returns at once
		t.Fatal(err)
	}
}
