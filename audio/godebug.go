package audio

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
)

// PortAudio's Go binding (gordonklaus/portaudio) hands Pa_OpenStream its
// stream id, a small integer, as a C void* (unsafe.Pointer(uintptr(id))). If
// the goroutine's stack is copied while that frame is live (it can grow in
// cgo's pointer check), the runtime finds "pointer" 0x2 on the stack and
// aborts the process: "fatal error: invalid pointer found on stack" (seen
// in TestCaptureVirtualMic on a loaded machine; the same can end a daemon
// opening its microphone). The check is a debugging aid that only GODEBUG
// can turn off, and only at process start, so a program that opens
// PortAudio streams re-executes itself once with it off.
const godebugInvalidPtr = "invalidptr=0"

// ReexecForPortAudio re-executes the running program with
// GODEBUG=invalidptr=0 added to its GODEBUG, unless it already has it. It
// returns only when nothing had to be done, or with an error when the
// re-exec failed (the caller may go on, with the risk above). Call it first
// thing in main, or in TestMain of tests that open PortAudio streams. The
// process keeps its PID, arguments and the rest of its environment
// (systemd's notify socket included).
func ReexecForPortAudio() error {
	cur := os.Getenv("GODEBUG")
	if slices.Contains(strings.Split(cur, ","), godebugInvalidPtr) {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("re-exec with GODEBUG=%s for PortAudio: %w", godebugInvalidPtr, err)
	}
	val := godebugInvalidPtr
	if cur != "" {
		val = cur + "," + godebugInvalidPtr
	}
	// Replace, not append: the first of duplicate variables wins.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GODEBUG=") })
	env = append(env, "GODEBUG="+val)
	if err := syscall.Exec(exe, os.Args, env); err != nil {
		return fmt.Errorf("re-exec %s with GODEBUG=%s for PortAudio: %w", exe, godebugInvalidPtr, err)
	}
	return nil // not reached
}
