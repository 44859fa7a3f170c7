package buffer

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Sync policies (Options.Sync).
const (
	SyncAlways   = "always"   // fsync before every write is acknowledged (default)
	SyncInterval = "interval" // fsync every SyncInterval; a power cut loses up to one interval
	SyncNone     = "none"     // leave it to the OS; a power cut loses whatever was in the page cache
)

// Audio retention policies (Options.AudioRetention).
const (
	RetainDrop = "drop" // journaled audio is removed when its text is stored (default)
	RetainKeep = "keep" // journaled audio is kept (and evicted first when a cap is reached)
)

// CheckSync is the one check of a sync policy name (Options.Sync and the
// configuration's storage.sync).
func CheckSync(policy string) error {
	switch policy {
	case SyncAlways, SyncInterval, SyncNone:
		return nil
	}
	return fmt.Errorf("%q is not one of always, interval, none", policy)
}

// CheckAudioRetention is the one check of an audio retention policy name
// (Options.AudioRetention and the configuration's storage.audio_retention).
func CheckAudioRetention(policy string) error {
	switch policy {
	case RetainDrop, RetainKeep:
		return nil
	}
	return fmt.Errorf("%q is not one of drop, keep", policy)
}

var (
	// ErrFull is returned (wrapped with what was refused) when a storage cap
	// is reached. Nothing already stored is touched.
	ErrFull = errors.New("storage cap reached")
	// ErrDiskFull is returned (wrapped, naming the state directory) when the
	// file system has too little free space left for a safe write.
	ErrDiskFull = errors.New("disk full")
	// ErrClosed is returned by operations on a closed Store.
	ErrClosed = errors.New("store closed")
)

// Options tune the store. The zero value is usable: sizes for a small device,
// Sync "always", audio retention "drop", no caps.
type Options struct {
	MaxBytes int64 // cap on stored bytes (keys+values of listen, outbox, journal, retained audio); 0 = none
	MaxItems int   // cap on stored items (listen records + outbox entries + pending audio clips); 0 = none

	Sync         string        // SyncAlways (default), SyncInterval or SyncNone
	SyncInterval time.Duration // period of the background fsync for SyncInterval; default 200ms

	AudioRetention string // RetainDrop (default) or RetainKeep

	// ReserveBytes is free disk space left to Badger for memtable flushes,
	// compactions and new files. Badger writes through mmap'd sparse files, so
	// running the file system out of space inside Badger would be a SIGBUS,
	// not an error (measured: SIGBUS in compaction's table writer on a full
	// tmpfs); writes are refused with ErrDiskFull before that. Default:
	// 4*MemTableSize + 8 MiB (memtable flushes plus an L0->L1 compaction).
	ReserveBytes int64

	MemTableSize     int64         // default 4 MiB
	ValueLogFileSize int64         // default 16 MiB (also the largest single value, e.g. a batch)
	BlockCacheSize   int64         // default 8 MiB
	IndexCacheSize   int64         // default 4 MiB
	GCInterval       time.Duration // value-log GC period; default 10m; negative disables

	// EncryptionKey (16, 24 or 32 bytes: AES-128/192/256) encrypts the
	// whole store at rest with Badger's encryption: tables, value log
	// (journaled audio included) and write-ahead log. nil: not encrypted.
	// A store is opened with the key it was created with (see Rekey).
	EncryptionKey []byte

	Logger *slog.Logger // nil means slog.Default()
}

func (o Options) withDefaults() (Options, error) {
	if o.Sync == "" {
		o.Sync = SyncAlways
	}
	if err := CheckSync(o.Sync); err != nil {
		return o, fmt.Errorf("option sync: %w", err)
	}
	if o.SyncInterval <= 0 {
		o.SyncInterval = 200 * time.Millisecond
	}
	if o.AudioRetention == "" {
		o.AudioRetention = RetainDrop
	}
	if err := CheckAudioRetention(o.AudioRetention); err != nil {
		return o, fmt.Errorf("option audio retention: %w", err)
	}
	if o.MaxBytes < 0 || o.MaxItems < 0 {
		return o, fmt.Errorf("option caps: max bytes %d and max items %d must not be negative", o.MaxBytes, o.MaxItems)
	}
	if o.MemTableSize <= 0 {
		o.MemTableSize = 4 << 20
	}
	if o.ValueLogFileSize <= 0 {
		o.ValueLogFileSize = 16 << 20
	}
	if o.BlockCacheSize <= 0 {
		o.BlockCacheSize = 8 << 20
	}
	if o.IndexCacheSize <= 0 {
		o.IndexCacheSize = 4 << 20
	}
	if o.ReserveBytes <= 0 {
		o.ReserveBytes = 4*o.MemTableSize + 8<<20
	}
	switch len(o.EncryptionKey) {
	case 0, 16, 24, 32:
	default:
		return o, fmt.Errorf("option encryption key: %d bytes, want 16, 24 or 32 (AES-128/192/256)", len(o.EncryptionKey))
	}
	if o.GCInterval == 0 {
		o.GCInterval = 10 * time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}
