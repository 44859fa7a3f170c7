// Package daemon wires agorad together: capture, segmentation, the audio
// journal, transcription, wake phrases and modes, the durable store, the MQTT
// uplink, the control socket, feedback sounds, metrics and systemd.
//
// Everything the daemon runs is a goroutine of one errgroup whose context
// ends the daemon; the speech path (capture → segment → journal → transcribe
// → route) is a chain of stages joined by channels, so a slow transcription
// back-pressures capture instead of dropping audio, and every utterance is
// journaled on disk before whisper sees it.
package daemon
