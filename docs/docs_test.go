package docs

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/agora/agorad/audio/testaudio"
)

var programs = []string{"agorad", "agoractl", "agora-bridge"}

// mention is one command shown in a document.
type mention struct {
	where string   // file:line
	prog  string   // agorad, agoractl, agora-bridge or make
	args  []string // what follows the program, up to a shell separator
}

// TestDocsCommands checks every command the documents show against the
// programs' own help and the Makefile, and runs the harmless ones.
func TestDocsCommands(t *testing.T) {
	root := testaudio.RepoRoot()
	files := []string{filepath.Join(root, "README.md"), filepath.Join(root, "refgraph", "README.md")}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, docs...)
	var ms []mention
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		ms = append(ms, mentions(rel, string(b))...)
	}
	count := map[string]int{}
	for _, m := range ms {
		count[m.prog]++
	}
	for _, p := range append(programs, "make") {
		if count[p] == 0 {
			t.Fatalf("no %s command found in the documents: the extraction is broken", p)
		}
	}

	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./cmd/agorad", "./cmd/agoractl", "./cmd/agora-bridge")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	h := &helps{bin: bin, texts: map[string]string{}}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		name := m.where + ": " + m.prog + " " + strings.Join(m.args, " ")
		t.Run(name, func(t *testing.T) {
			if m.prog == "make" {
				checkMake(t, string(makefile), m.args)
				return
			}
			h.check(t, m)
		})
	}

	// The harmless ones run.
	for _, args := range [][]string{
		{"agorad", "--version"}, {"agorad", "version"}, {"agorad", "model", "list"},
		{"agorad", "completion", "bash"}, {"agorad", "help"}, {"agora-bridge", "version"},
	} {
		shown := false
		for _, m := range ms {
			shown = shown || (m.prog == args[0] && strings.Join(m.args, " ") == strings.Join(args[1:], " "))
		}
		if !shown && args[1] != "version" && args[1] != "help" {
			continue
		}
		t.Run("runs "+strings.Join(args, " "), func(t *testing.T) {
			out, err := exec.Command(filepath.Join(bin, args[0]), args[1:]...).CombinedOutput()
			if err != nil || len(out) == 0 {
				t.Errorf("%s: %v\n%s", strings.Join(args, " "), err, out)
			}
		})
	}
}

var (
	codeSpan = regexp.MustCompile("`([^`]+)`")
	// a program at command position: start, after a shell operator, sudo
	// (-u USER), exec or nice.
	commandAt = regexp.MustCompile(`(?:^|&&|\|\||[;$(]|\| |\bsudo(?:\s+-u\s+\S+)?\s|\bexec\s|\bnice(?:\s+-n\s*\d+)?\s)\s*(agorad|agoractl|agora-bridge|make)(?:\s+(.*))?$`)
)

// mentions finds the commands in code blocks and code spans.
func mentions(file, text string) []mention {
	var out []mention
	inBlock := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock = !inBlock
			continue
		}
		var pieces []string
		if inBlock {
			pieces = []string{line}
		} else {
			for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
				pieces = append(pieces, m[1])
			}
		}
		for _, p := range pieces {
			p = strings.ReplaceAll(p, `\|`, "|")
			if c := strings.Index(p, " #"); c >= 0 && inBlock {
				p = p[:c] // a comment in a code block
			}
			for _, seg := range splitShell(p) {
				m := commandAt.FindStringSubmatch(strings.TrimSpace(seg))
				if m == nil || strings.HasPrefix(m[2], "agora") {
					continue // sudo -u agorad agorad ...: the second one is the command
				}
				out = append(out, mention{where: fmt.Sprintf("%s:%d", file, i+1), prog: m[1], args: strings.Fields(m[2])})
			}
		}
	}
	return out
}

// splitShell cuts a command line at its shell operators (" | ", ";",
// "&&", redirections); a bare "|" between words is the docs' "one of".
func splitShell(s string) []string {
	s = regexp.MustCompile(`\s+\|\s+|;|&&|\|\||\s\d?>\S*`).ReplaceAllString(s, "\x00")
	return strings.Split(s, "\x00")
}

// helps runs each program's -h once per command path.
type helps struct {
	bin   string
	texts map[string]string
}

func (h *helps) help(t *testing.T, prog string, path ...string) string {
	t.Helper()
	key := prog + " " + strings.Join(path, " ")
	if s, ok := h.texts[key]; ok {
		return s
	}
	args := append(append([]string{}, path...), "-h")
	if len(path) == 0 {
		args = []string{"--help"}
	}
	cmd := exec.Command(filepath.Join(h.bin, prog), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("%s %s: %v (help must exit 0)\n%s", prog, strings.Join(args, " "), err, out.String())
	}
	h.texts[key] = out.String()
	return out.String()
}

// commands parses a help's command table: each command with the
// subcommand words its line shows ("store check|salvage|rekey").
func commands(help string) map[string][]string {
	cmds := map[string][]string{}
	_, table, _ := strings.Cut(help, "commands:\n")
	word := regexp.MustCompile(`^[a-z][a-z-]*$`)
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "  ") {
			if strings.TrimSpace(line) != "" {
				break
			}
			continue
		}
		part, _, _ := strings.Cut(strings.TrimSpace(line), "  ") // command part, then its description
		f := strings.Fields(part)
		if len(f) == 0 || !word.MatchString(f[0]) {
			continue
		}
		subs := cmds[f[0]]
		if len(f) > 1 && regexp.MustCompile(`^[a-z][a-z|-]*$`).MatchString(f[1]) {
			subs = append(subs, strings.Split(f[1], "|")...)
		}
		cmds[f[0]] = subs
	}
	return cmds
}

var flagRe = regexp.MustCompile(`^\[?(--?[a-z][a-z0-9-]*)`)

func (h *helps) check(t *testing.T, m mention) {
	top := h.help(t, m.prog)
	cmds := commands(top)
	if len(cmds) == 0 {
		t.Fatalf("%s --help lists no commands:\n%s", m.prog, top)
	}
	args := m.args
	// Flags before the command: agoractl's global ones, --version.
	for len(args) > 0 && strings.HasPrefix(strings.TrimLeft(args[0], "["), "-") {
		f := flagRe.FindStringSubmatch(args[0])
		if f == nil {
			t.Errorf("%q is not a flag", args[0])
			return
		}
		if f[1] == "--version" || f[1] == "--help" || f[1] == "-h" {
			if out, err := exec.Command(filepath.Join(h.bin, m.prog), f[1]).CombinedOutput(); err != nil {
				t.Errorf("%s %s: %v\n%s", m.prog, f[1], err, out)
			}
			return
		}
		if !hasFlag(top, f[1]) {
			t.Errorf("%s has no global flag %s (%s --help)", m.prog, f[1], m.prog)
		}
		args = args[1:]
		if len(args) > 0 && !isCommand(cmds, args[0]) && !strings.HasPrefix(args[0], "-") {
			args = args[1:] // the flag's value (PATH, build/agorad.sock)
		}
	}
	if len(args) == 0 {
		return
	}
	cmd := args[0]
	subs, ok := cmds[cmd]
	if !ok {
		t.Errorf("%s has no command %q (%s --help lists %v)", m.prog, cmd, m.prog, keys(cmds))
		return
	}
	text := h.help(t, m.prog, cmd)
	if len(subs) > 0 && len(args) > 1 && regexp.MustCompile(`^[a-z][a-z|-]*$`).MatchString(args[1]) {
		for _, s := range strings.Split(args[1], "|") {
			if !contains(subs, s) {
				t.Errorf("%s %s has no subcommand %q (its help shows %v)", m.prog, cmd, s, subs)
				continue
			}
			if m.prog == "agorad" {
				text += h.help(t, m.prog, cmd, s)
			}
		}
	}
	if m.prog == "agoractl" {
		text = top // its commands' flags are in the one usage text
	}
	for _, a := range args[1:] {
		for _, alt := range strings.Split(a, "|") {
			if f := flagRe.FindStringSubmatch(alt); f != nil && !hasFlag(text, f[1]) {
				t.Errorf("%s %s has no flag %s (its -h:\n%s)", m.prog, cmd, f[1], text)
			}
		}
	}
}

// hasFlag: help shows the flag, as flag.PrintDefaults writes it (one dash)
// or as a usage line does (one or two).
func hasFlag(help, flag string) bool {
	name := strings.TrimLeft(flag, "-")
	return regexp.MustCompile(`(?m)(^|[\s\[|(])--?` + regexp.QuoteMeta(name) + `\b`).MatchString(help)
}

func checkMake(t *testing.T, makefile string, args []string) {
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "-"):
			// make's own flags (-s, -C)
		case strings.Contains(a, "="):
			v, _, _ := strings.Cut(a, "=")
			if !regexp.MustCompile(`\b` + regexp.QuoteMeta(v) + `\b`).MatchString(makefile) {
				t.Errorf("the Makefile does not use %s", v)
			}
		case regexp.MustCompile(`^[a-z][a-z0-9-]*$`).MatchString(a):
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(a) + `:`).MatchString(makefile) {
				t.Errorf("the Makefile has no target %s", a)
			}
		}
	}
}

func isCommand(cmds map[string][]string, s string) bool {
	_, ok := cmds[s]
	return ok
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func keys(m map[string][]string) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

// TestDocsReferences: the tests and files the documents name exist (a
// renamed test or a moved file leaves a doc pointing at nothing).
func TestDocsReferences(t *testing.T) {
	root := testaudio.RepoRoot()
	files := []string{filepath.Join(root, "README.md"), filepath.Join(root, "refgraph", "README.md")}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, docs...)
	var tests strings.Builder
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && (d.Name() == "build" || d.Name() == ".venv" || d.Name() == ".git" || d.Name() == "models") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, "_test.go") {
			b, _ := os.ReadFile(p)
			tests.Write(b)
		}
		return nil
	})
	testName := regexp.MustCompile(`\bTest[A-Z][A-Za-z0-9_]*`)
	pathRe := regexp.MustCompile("`((?:cmd|sync|audio|buffer|transcribe|wake|configs|scripts|refgraph|systemd|packaging|bench)/[A-Za-z0-9_./-]+)`")
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		seen := map[string]bool{}
		for _, n := range testName.FindAllString(string(b), -1) {
			if seen[n] {
				continue
			}
			seen[n] = true
			checked++
			if !strings.Contains(tests.String(), "func "+n+"(") {
				t.Errorf("%s names %s: no such test", rel, n)
			}
		}
		for _, m := range pathRe.FindAllStringSubmatch(string(b), -1) {
			p := m[1]
			if i := regexp.MustCompile(`\.[A-Z]`).FindStringIndex(p); i != nil {
				p = p[:i[0]] // package.Symbol
			}
			if seen[p] || strings.Contains(p, "/out") {
				continue // output directories exist after a run
			}
			seen[p] = true
			checked++
			if _, err := os.Stat(filepath.Join(root, p)); err != nil {
				t.Errorf("%s names %s: %v", rel, p, err)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d references found: the extraction is broken", checked)
	}
}
