package buffer

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/dgraph-io/badger/v4"
)

// ReadKeyFile reads an encryption key: 16, 24 or 32 raw bytes, or the same
// as hex text (`openssl rand -hex 32`), surrounding white space ignored.
// $VARIABLES in path are expanded, so that a systemd credential is named
// ${CREDENTIALS_DIRECTORY}/agorad-store-key (LoadCredential=/
// LoadCredentialEncrypted=).
func ReadKeyFile(path string) ([]byte, error) {
	p := os.ExpandEnv(path)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read encryption key: %w", err)
	}
	switch len(b) {
	case 16, 24, 32:
		return b, nil
	}
	text := bytes.TrimSpace(b)
	key := make([]byte, hex.DecodedLen(len(text)))
	if _, err := hex.Decode(key, text); err == nil {
		switch len(key) {
		case 16, 24, 32:
			return key, nil
		}
	}
	return nil, fmt.Errorf("encryption key %s: %d bytes: want 16, 24 or 32 raw bytes or 32, 48 or 64 hex digits (AES-128/192/256)", p, len(b))
}

// Rekey rotates the master key of the encrypted store in dir: the key
// registry (the data keys that encrypt the files, themselves encrypted with
// the master key) is rewritten under newKey; the data is not rewritten.
// Badger rotates the data keys by itself (every 10 days). The store must
// not be open (agorad stopped). newKey nil decrypts the registry only,
// which does not decrypt the data: use Salvage into a store without a key.
func Rekey(dir string, oldKey, newKey []byte) error {
	if len(newKey) == 0 {
		return errors.New("rekey: no new key (to remove encryption, salvage into a new store without a key)")
	}
	lock, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("rekey: %w", err)
	}
	defer lock.Close()
	// Badger holds this lock while the store is open.
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fmt.Errorf("rekey: the store %s is in use (stop agorad first): %w", dir, err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck
	if _, err := os.Stat(filepath.Join(dir, keyRegistryName)); err != nil {
		return fmt.Errorf("rekey: %w", err)
	}
	kr, err := badger.OpenKeyRegistry(badger.KeyRegistryOptions{Dir: dir, ReadOnly: true, EncryptionKey: oldKey})
	if errors.Is(err, badger.ErrEncryptionKeyMismatch) {
		return fmt.Errorf("rekey: the current key does not open the store: %w", ErrKey)
	}
	if err != nil {
		return fmt.Errorf("rekey: read key registry: %w", err)
	}
	if err := badger.WriteKeyRegistry(kr, badger.KeyRegistryOptions{Dir: dir, EncryptionKey: newKey}); err != nil {
		return fmt.Errorf("rekey: write key registry: %w", err)
	}
	return syncDir(dir)
}
