// Package spool holds, in memory, what the speech path accepted while the
// store had failed and nothing else could keep it (listen-mode notes; in
// feedback mode, utterances while the link is also down), until the store
// writes again. It is bounded in bytes (storage.spool_bytes).
//
// Invariants:
//   - Items leave only through Drain, in the order they were added, each
//     only after the caller's write of it succeeded; a failed write stops
//     the drain with that item and everything after it still held.
//   - Add never evicts: past the bound it refuses with ErrFull (the caller
//     refuses the utterance audibly); an item bigger than the bound is
//     refused too.
//   - Safe for concurrent use; Drain holds no lock while the caller writes,
//     so Add is never blocked by a slow store (an item added during a
//     drain is drained after the ones before it).
package spool
