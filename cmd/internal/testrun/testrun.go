// Package testrun runs a part under test (a server, a watcher, the daemon)
// in a goroutine the test owns, and stops it the way all those tests need:
// cancel its context, then wait a bounded time for it to return. A part
// still running when the test ends is stopped then.
package testrun

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// StopTimeout bounds how long Stop waits for the part to return (a daemon
// may take daemon.ShutdownGrace to finish the utterance it is transcribing).
const StopTimeout = 30 * time.Second

// Run is one part running in its own goroutine.
type Run struct {
	t      testing.TB
	what   string
	cancel context.CancelFunc
	done   chan struct{}
	err    error // set before done is closed
	once   sync.Once
	stop   error
}

// Start runs fn(ctx) until Stop, or until the test ends. what names the
// part in failures ("control.Serve").
func Start(t testing.TB, what string, fn func(ctx context.Context) error) *Run {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &Run{t: t, what: what, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = fn(ctx)
	}()
	t.Cleanup(func() { r.Stop() })
	return r
}

// Done is closed once fn has returned, for tests that expect it to end on
// its own (or never to).
func (r *Run) Done() <-chan struct{} { return r.done }

// Err is fn's result; call it only after Done is closed.
func (r *Run) Err() error { return r.err }

// Stop cancels fn's context and waits up to StopTimeout for it to return,
// then returns its error. A part that does not return fails the test. Stop
// may be called more than once; later calls return the same result.
func (r *Run) Stop() error {
	r.once.Do(func() {
		r.cancel()
		select {
		case <-r.done:
			r.stop = r.err
		case <-time.After(StopTimeout):
			r.t.Errorf("%s did not return within %v of its context's end", r.what, StopTimeout)
			r.stop = fmt.Errorf("%s did not stop", r.what)
		}
	})
	return r.stop
}
