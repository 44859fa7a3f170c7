// Package replies speaks the backend's replies on the device: it stores each
// reply command before the broker is acknowledged, decides when it may be
// spoken (mode, urgency, expiry, push-to-talk), speaks it through a tts
// Engine on the shared speaker, and acknowledges the outcome.
//
// Invariants:
//   - One voice at a time, in arrival order: a single goroutine (Run) speaks;
//     earcons queue behind speech on the same player. A reply's parts
//     ("<id>.p<i>of<n>", or streamed "<id>.s<i>" and the last "<id>.s<i>e")
//     are spoken together, in index order, each only
//     after the one before it ended or was declared missing (parts.go);
//     a part's max_age counts from the end of the part before it.
//   - A missing part is waited for at most PartWait, then said aloud and
//     acked "missing" under its own id (stored, so a late copy is a
//     redelivery, never spoken).
//   - A reply is stored (buffer.Store.AddReply) before Receive returns, and
//     de-duplicated by id there: a redelivery is never queued twice.
//   - A reply is marked "speaking" in the store before its first sample is
//     played. A crash while speaking ends it as interrupted at the next
//     start; it is never spoken again by itself, so nothing is spoken twice
//     (`agoractl replies play ID` replays on request).
//   - Every outcome (spoken, interrupted, expired, held, failed) is stored
//     together with its ack to the backend, in one transaction.
//   - An expired reply is never spoken; it stays listed.
//   - Half duplex: Muted is true while speaking and for Tail after, and the
//     capture path consults it so the device never transcribes itself.
//   - Push-to-talk (SetPTT) interrupts speech at once and starts nothing new
//     while the key is held.
package replies
