// Package uplink drains the device outbox to the backend over MQTT and takes
// the backend's commands: a paho client with a persistent session, QoS 1,
// retained status and last will, its own reconnect loop with exponential
// backoff and full jitter, and delete-after-PUBACK delivery in seq order.
// A batch (and under delivery: backend every entry) is deleted only once
// the backend acked it too (confirm.go); one the backend parked is kept in
// the outbox and not published again by this process (parked.go).
//
// Files, one job each: uplink.go (Options, Stats, the Client and its
// online state), connect.go (the connect loop, backoff, status and will),
// commands.go (commands in: order, acks owed, the rate limit), tls.go (TLS
// settings), drain.go (the outbox out, in seq order), confirm.go and
// parked.go (the backend's acks and parks), inbox.go/intake.go (commands
// kept before they are handled), handover.go (one publish bounded by the
// session), unstored.go (what the failed store could not keep), watch.go
// (the unconfirmed and stuck-queue figures), broker.go (URL schemes).
package uplink
