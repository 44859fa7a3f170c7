// Package daemon wires agorad together: capture, segmentation, the audio
// journal, transcription, wake phrases and modes, the durable store, the MQTT
// uplink, the control socket, feedback sounds, metrics and systemd.
//
// Daemon (daemon.go) only wires the parts and owns their lifetimes; each job
// is a part of its own: the speech path (speech.go, capture.go), the router,
// the only writer of the mode (router.go), status and metrics (status.go),
// commands from agoractl and the backend (commands.go), SIGHUP (reload.go)
// and the earcons (sounds.go). New parts plug in beside these: the spoken
// replies (replies.go wires cmd/agorad/internal/replies; the capture loop
// asks its half-duplex gate and push-to-talk interrupts it) and the storage
// health (health.go wires buffer/health: it tells of a failed state
// directory, and a store whose directory is gone or replaced is never closed
// into the wrong one).
//
// Everything the daemon runs is a goroutine of an errgroup whose context
// ends it; the speech path stops first on shutdown (finishing the utterance
// being spoken), the services after it. The speech path (capture → segment →
// journal → transcribe → route) is a chain of stages joined by channels, so
// a slow transcription back-pressures capture instead of dropping audio, and
// every utterance is journaled on disk before whisper sees it. A lone
// utterance goes to whisper at once; a backlog (journaled audio at start,
// speech faster than whisper) is packed into shared whisper windows, and
// still reaches the router one result per utterance, in order, each journal
// entry released only after its own result is handed on. Whisper may start
// on an utterance before the turn ends (speculate.go, a preview during the
// hangover), but that text reaches the router only through the utterance's
// journaled job, so a crash loses no more than it did before: the audio of
// a turn not yet ended.
package daemon
