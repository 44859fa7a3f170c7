package main

import (
	"fmt"
	"os"
	"strings"
)

// readPasswordFile reads broker.password_file: environment variables in the
// path are expanded, so that a DynamicUser unit can name its systemd
// credential (${CREDENTIALS_DIRECTORY}/mqtt-password, LoadCredential=); the
// password is the file's first line without surrounding blanks.
func readPasswordFile(path string) (string, error) {
	p := os.ExpandEnv(path)
	b, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("broker.password_file: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pw := strings.TrimSpace(line)
	if pw == "" {
		return "", fmt.Errorf("broker.password_file %s: first line is empty (the password goes there)", p)
	}
	return pw, nil
}
