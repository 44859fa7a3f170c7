package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestHelpExitsZero: asking for help is not a usage error. Every command
// of the usage text answers -h with its usage and exit 0 (scripts and the
// docs test run them; `agorad store -h` once said "unknown subcommand").
func TestHelpExitsZero(t *testing.T) {
	cmds, subs := commandTable()
	var paths [][]string
	for _, c := range cmds {
		if noFlagProbe[c] {
			continue
		}
		paths = append(paths, []string{c})
		for _, s := range subs[c] {
			paths = append(paths, []string{c, s})
		}
	}
	if len(paths) < 8 {
		t.Fatalf("only %d commands in the usage text: %v", len(paths), paths)
	}
	for _, p := range paths {
		t.Run(strings.Join(p, " "), func(t *testing.T) {
			var out bytes.Buffer
			code := dispatch(context.Background(), append(append([]string{}, p...), "-h"), &out, &out)
			if code != exitOK {
				t.Errorf("agorad %s -h: exit %d, want 0:\n%s", strings.Join(p, " "), code, out.String())
			}
			if !strings.Contains(strings.ToLower(out.String()), "usage") {
				t.Errorf("agorad %s -h printed no usage:\n%s", strings.Join(p, " "), out.String())
			}
		})
	}
}
