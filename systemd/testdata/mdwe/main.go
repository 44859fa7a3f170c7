// Command mdwe runs whisper.cpp (with the Silero VAD) under the kernel's
// memory-deny-write-execute policy, the same restriction the unit's
// MemoryDenyWriteExecute=yes applies, to show ggml needs no W+X memory.
// Usage: mdwe WHISPER_MODEL VAD_MODEL. Prints "ok" on success; exit 3 when
// the kernel lacks PR_SET_MDWE.
package main

import (
	"fmt"
	"math"
	"os"
	"syscall"

	"github.com/agora/agorad/audio/ggml"
	"github.com/ggerganov/whisper.cpp/bindings/go/pkg/whisper"
)

const (
	prSetMDWE            = 65
	prMDWERefuseExecGain = 1
)

func main() {
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetMDWE, prMDWERefuseExecGain, 0, 0, 0, 0); e != 0 {
		fmt.Println("no PR_SET_MDWE:", e)
		os.Exit(3)
	}
	// The policy must be in force: a writable+executable mapping is refused.
	if _, err := syscall.Mmap(-1, 0, 4096, syscall.PROT_READ|syscall.PROT_WRITE|syscall.PROT_EXEC, syscall.MAP_ANON|syscall.MAP_PRIVATE); err == nil {
		fmt.Println("MDWE not enforced: W+X mapping succeeded")
		os.Exit(4)
	}
	if err := ggml.LoadBackends(); err != nil {
		fail(err)
	}
	model, err := whisper.New(os.Args[1])
	if err != nil {
		fail(err)
	}
	defer model.Close()
	samples := make([]float32, 3*whisper.SampleRate)
	for i := range samples {
		samples[i] = 0.3 * float32(math.Sin(2*math.Pi*220*float64(i)/whisper.SampleRate)*math.Sin(math.Pi*float64(i)/float64(len(samples))))
	}
	// Once without VAD (the encoder and decoder run), once with it (Silero).
	for _, vad := range []bool{false, true} {
		ctx, err := model.NewContext()
		if err != nil {
			fail(err)
		}
		ctx.SetThreads(2)
		if vad {
			ctx.SetVAD(true)
			ctx.SetVADModelPath(os.Args[2])
		}
		encoded := false
		if err := ctx.Process(samples, func() bool { encoded = true; return true }, nil, nil); err != nil {
			fail(err)
		}
		if !vad && !encoded {
			fail(fmt.Errorf("the encoder did not run"))
		}
	}
	fmt.Println("ok")
}

func fail(err error) {
	fmt.Println("error:", err)
	os.Exit(1)
}
