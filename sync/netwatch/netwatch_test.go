package netwatch

import (
	"context"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func nlmsg(typ uint16) []byte {
	b := make([]byte, unix.SizeofNlMsghdr+4)
	binary.NativeEndian.PutUint32(b[0:], uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:], typ)
	return b
}

func TestChanged(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
		want bool
	}{
		{"new link", nlmsg(unix.RTM_NEWLINK), true},
		{"address gone", nlmsg(unix.RTM_DELADDR), true},
		{"new route", nlmsg(unix.RTM_NEWROUTE), true},
		{"done only", nlmsg(unix.NLMSG_DONE), false},
		{"neighbour", nlmsg(unix.RTM_NEWNEIGH), false},
		{"noop then address", append(nlmsg(unix.NLMSG_NOOP), nlmsg(unix.RTM_NEWADDR)...), true},
		{"empty", nil, false},
	}
	for _, tc := range tests {
		if got := isChange(tc.b); got != tc.want {
			t.Errorf("%s: isChange = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The real kernel: in a network namespace of its own (so the host's network
// is not touched), bringing lo up is reported once, and Run ends with ctx.
func TestLinkUpReported(t *testing.T) {
	type opened struct {
		w   *Watcher
		err error
	}
	ch := make(chan opened, 1)
	up := make(chan error, 1)
	go func() {
		// This thread moves to a new namespace and is never unlocked: it
		// exits with the goroutine instead of going back to the pool.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			ch <- opened{err: err}
			return
		}
		w, err := Open()
		ch <- opened{w, err}
		if err != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
		up <- linkUp("lo")
	}()
	o := <-ch
	if o.err != nil {
		t.Skipf("no network namespace of our own here: %v", o.err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	changed := make(chan struct{}, 1)
	go func() { done <- o.w.Run(ctx, changed) }()
	if err := <-up; err != nil {
		cancel()
		<-done
		if errors.Is(err, unix.EPERM) {
			// A container (systemd-nspawn without CAP_NET_ADMIN) lets us
			// make a namespace but not change a link in it.
			t.Skipf("bring lo up in our own network namespace: %v (no CAP_NET_ADMIN here)", err)
		}
		t.Fatalf("bring lo up: %v", err)
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("lo came up and no change was reported")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func linkUp(name string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
