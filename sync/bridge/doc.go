// Package bridge is agora-bridge's core: it hands each device message
// (docs/protocol.md) over to the AGORA agent graph as one AG-UI run and
// answers the device with reply and ack commands. docs/bridge.md describes
// the behaviour for operators; these are the invariants the code keeps.
//
//   - One device, one message at a time, in arrival order (= the device's
//     seq order): the transports (MQTT: a worker per device; JetStream: one
//     partition per device, MaxAckPending 1, and while the device has a
//     backlog in the KV bucket only its leased drainer hands its messages
//     over) never call Handle concurrently for one device.
//   - A message id is run at most once per Store: Handle looks the id up
//     before running and commits the record (with the reply) before anything
//     is published; a duplicate re-sends the stored reply and the ack.
//   - Nothing is acknowledged early: the transport acks the broker message
//     only after Handle returned nil, which it does only after the record was
//     committed and the reply and ack commands were confirmed (PUBACK).
//     Errors (shutdown, store, broker) leave the message for redelivery.
//   - A run is retried within Retry's bounds and then parked (dead letter,
//     metric, log); a parked message is acked and does not hold the device's
//     later messages.
//   - Bounded by construction (docs/bridge.md "Limits"): a device's worker
//     ends when idle; past a small in-memory queue its messages wait in a
//     bounded backlog in the state (acked to the broker once kept), so one
//     device never holds the broker's delivery to the others (until its
//     backlog is full); in fleet mode a run past DeviceHold moves its
//     device's messages into such a backlog in the KV bucket, so it holds
//     its partition at most that long; parts are
//     kept only up to MaxBatchBytes and PartTTL, joins share JoinBudget.
//   - Parts are joined only when they agree; a batch's kept parts are
//     dropped only with the commit that runs or parks it whole (or, expired,
//     with the dead letter that holds them).
//   - One message cannot move a device's sequence so far that its real
//     messages are refused: a seq more than MaxSeqJump (plus the outbox the
//     device's status reports) above its store's last is parked.
//   - A streamed answer's parts (stream.go) are kept in the store before
//     they are published, one at a time, in order; a part's number is
//     never given to other words: a redelivery re-sends the parts kept
//     and sends only the parts after them; the last part goes with the
//     commit, and the kept parts are dropped after it.
//   - Bad input is counted, logged with a bounded excerpt and acknowledged;
//     nothing is ever published to a device other than the one named by the
//     topic the message came from.
//
// Files, one job each: bridge.go (Options, New, Handle's dispatch by topic),
// validate.go (the envelope and id checks), control.go (status, events,
// dead letters, acks), data.go (an utterance or batch to its run and
// commit), run.go (the run with retry and its input), reply.go (the answer
// to a reply command), stream.go (an answer sent in parts while the graph
// writes it), sentences.go (its cut into sentences), streamstore.go (its
// parts kept), parts.go/pending.go (batch parts), seq.go (the
// sequence rule), store.go/kvstore.go (the state), mqtt*.go/jetstream.go
// (the two transports), aside.go (fleet mode's per-device backlog), brokeropen.go (the open-broker warning),
// park.go/deadfiles.go/refusal.go (dead letters).
package bridge
