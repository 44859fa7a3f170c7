package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadPasswordFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AGTEST_CRED_DIR", dir)
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("plain", "s3cret\n")
	write("crlf", " s3cret \r\nsecond line\n")
	write("empty", "\nother\n")
	for _, tc := range []struct {
		name, path, want, err string
	}{
		{"plain", filepath.Join(dir, "plain"), "s3cret", ""},
		{"environment expanded", "${AGTEST_CRED_DIR}/plain", "s3cret", ""},
		{"first line only", filepath.Join(dir, "crlf"), "s3cret", ""},
		{"empty first line", filepath.Join(dir, "empty"), "", "first line is empty"},
		{"missing", "${AGTEST_CRED_DIR}/absent", "", "broker.password_file: open " + dir + "/absent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readPasswordFile(tc.path)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
