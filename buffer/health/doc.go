// Package health watches the storage under a running store and says, within
// seconds, when it fails: a write or sync error, a read-only file system
// (EROFS: ext4 remounted read-only after an error, the usual end of a worn
// SD card), I/O errors (EIO), a full file system (ENOSPC), the state
// directory or its identity file gone, or a different file system mounted
// in its place.
//
// A Monitor takes the device and inode of the store directory when it is
// made and then probes every Interval: a stat of the directory (same device
// and inode as at the start) and of the identity file, a statfs (at least
// MinFree bytes free) and an open for writing of a probe file beside the
// identity file (never inside the store directory, whose files belong to
// Badger): a file system remounted read-only refuses that open, with no
// block written. Every WriteEvery, and at every probe while failed, the
// probe also writes and fsyncs the file (I/O errors show on a write). The
// errors the store's own writes return are handed to Report and
// classified the same way, at once.
//
// Invariants:
//   - The state is OK, Failed{Kind, Since, Err} or Recovering. A failure
//     seen in OK starts a new episode (Episode is incremented once); a
//     failure seen while Failed or Recovering belongs to the same episode
//     and keeps the first Since. OK is reached again only through
//     Recovering: a probe that passes at least Interval after the last
//     failure seen, then the owner's Recover check (a store write) that
//     succeeds.
//   - Errors that are not storage failures (a storage cap reached, a store
//     that is closed, a cancelled context) never change the state.
//   - At most one probe is in flight: a probe stuck in the kernel (a dead
//     device that does not answer an fsync) is a failure of kind io after
//     ProbeTimeout, and no second probe is started behind it.
//   - Changes are signalled on a coalescing channel and never block a
//     writer; readers take the current State.
//   - Run owns the only goroutine (plus a probe stuck in the kernel, which
//     cannot be interrupted and ends when the kernel returns); it ends with
//     its context.
package health
