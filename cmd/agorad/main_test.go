package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/cmd/agorad/internal/daemon"
)

func TestDispatch(t *testing.T) {
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{nil, exitUsage, "", "usage: agorad"},
		{[]string{"help"}, exitOK, "model fetch NAME", ""},
		{[]string{"--help"}, exitOK, "transcribe FILE", ""},
		{[]string{"version"}, exitOK, "agorad dev", ""},
		{[]string{"frobnicate"}, exitUsage, "", `unknown command "frobnicate"`},
		{[]string{"run", "--bogus"}, exitUsage, "", "flag provided but not defined: -bogus"},
		{[]string{"run", "-c", "/nonexistent/agorad.yaml"}, exitUsage, "", "/nonexistent/agorad.yaml"},
		{[]string{"model"}, exitUsage, "", "usage: agorad model"},
		{[]string{"model", "delete"}, exitUsage, "", `unknown subcommand "delete"`},
		{[]string{"model", "list"}, exitOK, "base.en", ""},
		{[]string{"transcribe"}, exitUsage, "", "no input files"},
		{[]string{"transcribe", "--lang", "de", "x.wav"}, exitUsage, "", `--lang "de"`},
		{[]string{"transcribe", "--threads", "-1", "x.wav"}, exitUsage, "", "--threads -1"},
		{[]string{"transcribe", "--bogus"}, exitUsage, "", "flag provided but not defined: -bogus"},
		{[]string{"devices", "extra"}, exitUsage, "", `unexpected argument "extra"`},
	}
	for _, tc := range tests {
		var out, errOut bytes.Buffer
		code := dispatch(context.Background(), tc.args, &out, &errOut)
		if code != tc.code || !strings.Contains(out.String(), tc.stdout) || !strings.Contains(errOut.String(), tc.stderr) {
			t.Errorf("agorad %q: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
				tc.args, code, out.String(), errOut.String(), tc.code, tc.stdout, tc.stderr)
		}
	}
}

func TestRunExitCode(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, exitOK},
		{fmt.Errorf("start: %w", &daemon.ConfigError{Err: errors.New("wake rules: empty")}), exitUsage},
		{daemon.ErrUndrained, exitUndrained},
		{fmt.Errorf("microphone: %w", errors.New("no such device")), exitFailed},
		{fmt.Errorf("%w: state dir gone", buffer.ErrCloseFailed), exitStoreFailed},
		{errors.Join(daemon.ErrUndrained, fmt.Errorf("%w: read-only", buffer.ErrCloseFailed)), exitStoreFailed},
	}
	for _, tt := range tests {
		if got := runExitCode(tt.err); got != tt.want {
			t.Errorf("runExitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}
