// Package sync is not imported by anything: the folder groups the
// store-and-forward packages that move what the inspector said from the
// device to the backend.
//
// The design fixes a top-level sync/ folder, but a package named sync would
// shadow the standard library's sync in every file that needs both (and most
// of this code needs a mutex), forcing an import alias on each importer. So
// the code lives in subpackages named for their job, which nobody has to
// rename:
//
//   - sync/protocol: the wire format (topics, JSON messages, command validation)
//   - sync/uplink: the MQTT client that drains the outbox and takes commands
//   - sync/brokertest: a real mosquitto (or nats-server) on a free loopback port, for tests
//   - sync/agui: the backend side's AG-UI client
//   - sync/bridge: the backend side, agora-bridge's core (docs/bridge.md)
package sync
