// Package chain runs the whole AGORA chain on one machine, every part real:
// a mosquitto of its own on a free loopback port, the reference graph under
// uvicorn, the built agora-bridge, and the built agorad with real whisper
// weights on an ALSA file microphone fed at real time from a FIFO (Mic).
// make demo and the whole-conversation tests share it.
//
// Invariants:
//   - Everything Start started, Stop stops (each child in its own process
//     group); Start stops what it had started when it fails.
//   - Only 127.0.0.1 addresses; all state, logs and the FIFO live in
//     Options.Dir.
//   - The microphone is paced by the wall clock, 200 ms per write: every
//     latency is measured from Spoken.End, the end of a line's speech as it
//     went into the FIFO.
//   - agorad runs with mqtt.delivery: backend, so an empty outbox means the
//     bridge confirmed every entry.
//   - The harness only watches (agoractl status, a recording MQTT
//     subscriber, the graph's debug endpoint) and speaks; it never acts on
//     the device's behalf.
package chain
