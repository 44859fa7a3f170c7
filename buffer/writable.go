package buffer

import (
	"time"

	"github.com/dgraph-io/badger/v4"
)

// keyHealth holds the time of the last CheckWritable (see docs/storage.md).
var keyHealth = []byte("m/health")

// IdentityPath is the identity file kept beside the store directory dir.
func IdentityPath(dir string) string { return identityPath(dir) }

// CheckWritable proves the store writes again after a storage failure: one
// small write through the path every write takes (free-space guard, the
// reopen after a disk-full failure, the sequence lease, a commit fsynced
// under sync "always"). It uses no sequence number.
func (s *Store) CheckWritable() error {
	return s.write("storage health check", 64, func(txn *badger.Txn, _ uint64) (func(), error) {
		return nil, txn.Set(keyHealth, []byte(time.Now().UTC().Format(time.RFC3339Nano)))
	})
}
