// Package netwatch tells when the device's network changed (a link, an
// address or a route came or went), so the uplink can try the broker at once
// instead of sleeping out its reconnect backoff: an inspector walking out of
// a basement gets a link, and the backlog should flow with it.
//
// Invariants:
//   - One rtnetlink socket (NETLINK_ROUTE, link/address/route groups), opened
//     by Open in the caller's network namespace; Run reads it until ctx ends
//     and then closes it. Nothing is sent on the socket.
//   - Changes are coalesced: Run's channel holds at most one pending signal, a
//     burst of netlink messages (one address change is several) is one wake-up,
//     and a slow reader never blocks the socket's reader.
//   - Only the fact of a change is reported, not what changed: the uplink's
//     answer (try to connect now) is the same for all of them.
package netwatch
