package transcribe

import "runtime"

// osThread runs functions one at a time on a single locked OS thread.
//
// Why: ggml's CPU backend parallelises with OpenMP (scripts/whisper.sh
// builds it so, as Debian does), and libgomp keeps a pool of worker threads
// per calling (master) thread. Go runs a goroutine on whichever OS thread is
// free, so successive whisper calls came from different threads, each new
// one adding a pool. Once the pools hold more threads than there are cores,
// libgomp stops spinning at its barriers and sleeps on futexes instead, and
// ggml has one barrier per graph node: every decoder step after the first
// call then cost 11–18 ms instead of 2–3 ms (tiny.en q8_0, 2 threads,
// measured on the 68-clip file; the decoder is many small nodes, so it pays
// the wake-ups, the encoder hardly). All of a whisper context's compute
// therefore runs on one thread of its own.
type osThread struct {
	calls chan func()
	done  chan struct{}
}

func startOSThread() *osThread {
	t := &osThread{calls: make(chan func()), done: make(chan struct{})}
	go func() {
		defer close(t.done)
		// Never unlocked: when the loop ends the goroutine exits locked and
		// Go ends the thread, and libgomp's pool with it.
		runtime.LockOSThread()
		for f := range t.calls {
			f()
		}
	}()
	return t
}

// do runs f on the thread and waits for it.
func (t *osThread) do(f func()) {
	ran := make(chan struct{})
	t.calls <- func() { defer close(ran); f() }
	<-ran
}

// stop ends the thread after the call in progress; do must not be called
// after or during stop.
func (t *osThread) stop() {
	close(t.calls)
	<-t.done
}
