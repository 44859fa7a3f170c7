package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The generated script is loaded into a real bash and asked what it
// completes, the way bash's programmable completion calls it.
func TestCompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"completion", "bash"}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	script := filepath.Join(t.TempDir(), "agorad")
	if err := os.WriteFile(script, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "clip.wav"), nil, 0o644)
	tests := []struct {
		words []string // the command line; the last word is being completed
		want  string   // COMPREPLY, space-separated
	}{
		{[]string{"agorad", ""}, "run transcribe devices model doctor store completion version help"},
		{[]string{"agorad", "do"}, "doctor"},
		{[]string{"agorad", "model", ""}, "fetch import list"},
		{[]string{"agorad", "store", "s"}, "salvage"},
		{[]string{"agorad", "store", "check", "--s"}, "--state-dir"},
		{[]string{"agorad", "doctor", "--p"}, "--ptt-wait"},
		{[]string{"agorad", "doctor", "-"}, "-c --json --ptt-wait -v"},
		{[]string{"agorad", "run", "--st"}, "--state-dir"},
		{[]string{"agorad", "model", "fetch", "--"}, "--dir"},
		{[]string{"agorad", "transcribe", "cl"}, "clip.wav"},
	}
	for _, tc := range tests {
		var q []string
		for _, w := range tc.words {
			q = append(q, "'"+w+"'")
		}
		prog := ". " + script + "; COMP_WORDS=(" + strings.Join(q, " ") + "); COMP_CWORD=" +
			string(rune('0'+len(tc.words)-1)) + "; _agorad; echo \"${COMPREPLY[*]}\""
		cmd := exec.Command(bash, "--norc", "-c", prog)
		cmd.Dir = dir
		got, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v\n%s", tc.words, err, got)
		}
		if g := strings.TrimSpace(string(got)); g != tc.want {
			t.Errorf("complete %q = %q, want %q", tc.words, g, tc.want)
		}
	}
	// Every command of the table is offered, so a new command cannot be
	// forgotten.
	cmds, _ := commandTable()
	if len(cmds) < 8 || !strings.Contains(out.String(), strings.Join(cmds, " ")) {
		t.Errorf("commands %q not all in the script", cmds)
	}
}
