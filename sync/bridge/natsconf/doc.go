// Package natsconf renders the nats-server configuration of a fleet
// (docs/bridge.md, "Fleet: nats-server"): JetStream, the MQTT listener, the
// mapping that puts each device's data into one of N partitions, and the
// authorization that confines every device to its own topics, as the
// shipped mosquitto ACL does (configs/mosquitto/acl).
//
// Invariants:
//   - Every client has a user and a bcrypt password hash; no anonymous user,
//     no plaintext password in the output.
//   - A device user may publish only its own data subjects, in the form the
//     server checks them (after the partition mapping:
//     agora.in.*.<device>.<topic>; status unmapped), and subscribe only to
//     its own commands plus $MQTT.sub.> (the delivery subjects of the
//     server's own MQTT QoS 1 consumers, which an MQTT client cannot
//     subscribe to by topic).
//   - Only the bridge user (agora-bridge) has every right: it reads all
//     data through JetStream and publishes commands.
//   - A user name must be a valid device id (protocol.ValidDeviceID) or the
//     bridge's; the passwd file is name:hash lines.
package natsconf
