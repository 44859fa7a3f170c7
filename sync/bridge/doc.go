// Package bridge is agora-bridge's core: it hands each device message
// (docs/protocol.md) over to the AGORA agent graph as one AG-UI run and
// answers the device with reply and ack commands. docs/bridge.md describes
// the behaviour for operators; these are the invariants the code keeps.
//
//   - One device, one message at a time, in arrival order (= the device's
//     seq order): the transports (MQTT: a worker per device; JetStream: one
//     partition per device, MaxAckPending 1) never call Handle concurrently
//     for one device.
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
//   - Bad input is counted, logged with a bounded excerpt and acknowledged;
//     nothing is ever published to a device other than the one named by the
//     topic the message came from.
package bridge
