// Package sdnotifytest stands in for systemd's notification socket in tests.
package sdnotifytest

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// Socket listens on a unixgram socket, sets NOTIFY_SOCKET to it (so the
// test must not be parallel) and returns the datagrams sent to it. The
// channel is closed when the socket is, at the end of the test.
func Socket(t testing.TB) <-chan string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sdn") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	msgs := make(chan string, 100)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	return msgs
}
