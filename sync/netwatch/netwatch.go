package netwatch

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// groups are the rtnetlink multicast groups whose messages mean "the way to
// the broker may have changed".
const groups = unix.RTMGRP_LINK | unix.RTMGRP_IPV4_IFADDR | unix.RTMGRP_IPV6_IFADDR |
	unix.RTMGRP_IPV4_ROUTE | unix.RTMGRP_IPV6_ROUTE

// poll bounds how long Run takes to see ctx end (the socket's read timeout).
const poll = 250 * time.Millisecond

// Watcher reads rtnetlink's change notifications.
type Watcher struct {
	fd int
}

// Open subscribes to rtnetlink's link, address and route changes.
func Open() (*Watcher, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netwatch: open rtnetlink socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: groups}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netwatch: subscribe to link, address and route changes: %w", err)
	}
	tv := unix.NsecToTimeval(poll.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netwatch: set read timeout: %w", err)
	}
	return &Watcher{fd: fd}, nil
}

// Run reads the socket until ctx ends, then closes it; after one or more
// changes it sends a value on changed without blocking (give it a buffer of
// one). A read error other than the timeout ends Run with the error (the
// uplink then only has its backoff).
func (w *Watcher) Run(ctx context.Context, changed chan<- struct{}) error {
	defer unix.Close(w.fd)
	buf := make([]byte, 64<<10)
	for ctx.Err() == nil {
		n, _, err := unix.Recvfrom(w.fd, buf, 0)
		switch {
		case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ENOBUFS):
			// The kernel dropped messages because we were slow: there were
			// changes all the same.
		case err != nil:
			return fmt.Errorf("netwatch: read rtnetlink: %w", err)
		case !isChange(buf[:n]):
			continue
		}
		select {
		case changed <- struct{}{}:
		default: // one pending signal is enough
		}
	}
	return nil
}

// isChange reports whether the datagram holds a link, address or route
// message (not only NLMSG_DONE/NOOP/ERROR).
func isChange(b []byte) bool {
	msgs, err := syscall.ParseNetlinkMessage(b)
	if err != nil {
		return len(b) > 0 // unparsable but something happened: try anyway
	}
	for _, m := range msgs {
		switch m.Header.Type {
		case unix.RTM_NEWLINK, unix.RTM_DELLINK, unix.RTM_NEWADDR, unix.RTM_DELADDR,
			unix.RTM_NEWROUTE, unix.RTM_DELROUTE:
			return true
		}
	}
	return false
}
