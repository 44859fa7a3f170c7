// Package buffer is agorad's durable store: Badger v4 under a state
// directory. It holds the device state (mode, per-device sequence counter),
// the listen buffer, the outbox (two lanes, delivered in Seq order) and the
// audio journal (utterance audio written before transcription so a crash
// mid-transcription loses nothing). It enforces storage caps by refusing new
// items, never by dropping stored ones, and turns a full disk into a clear
// error instead of a crash. A close never runs Badger's memtable flush where
// it cannot succeed (directory gone, read-only, no room: it would retry
// forever or die of SIGBUS) and CloseWithin bounds it, leaving what was
// accepted in Badger's write-ahead log. Check and Salvage never panic on a
// damaged table and read a table's data blocks even without its index. See
// docs/storage.md for the key layout and the policies.
package buffer
