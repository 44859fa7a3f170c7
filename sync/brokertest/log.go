package brokertest

import (
	"bytes"
	"sync"
)

// Log is a goroutine-safe sink for the log of a program under test (a
// client's slog handler, a daemon's stderr), read back with String for
// assertions. The zero value is ready to use.
type Log struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
