package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/cmd/internal/control"
	"github.com/agora/agorad/cmd/internal/control/controltest"
)

// hostile is text a backend (or a typed note) could carry to recolour or
// retitle the operator's terminal, or to forge table lines.
var hostile = []struct{ name, text, want string }{
	{"ANSI colour", "\x1b[31mrood\x1b[0m", `\x1b[31mrood\x1b[0m`},
	{"OSC title", "\x1b]0;owned\x07ok", `\x1b]0;owned\aok`},
	{"CR LF forged line", "ja\r\n2026-01-01 00:00:00  r9  nl  spoken  forged", `ja\r\n2026-01-01 00:00:00  r9  nl  spoken  forged`},
	{"tab", "a\tb", `a\tb`},
	{"C1 CSI", "x\u009b2Jy", `x\u009b2Jy`},
	{"bidi override", "abc\u202edef", `abc\u202edef`},
	{"plain Dutch kept", "Ja, de scheur is één meter.", "Ja, de scheur is één meter."},
}

func TestShown(t *testing.T) {
	for _, tc := range hostile {
		t.Run(tc.name, func(t *testing.T) {
			if got := shown(tc.text); got != tc.want {
				t.Errorf("shown(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

// escReplies is a daemon whose stored replies carry hostile text.
type escReplies struct {
	*controltest.Fake
	text string
}

func (s *escReplies) Replies(context.Context, int) (control.RepliesResult, error) {
	return control.RepliesResult{Replies: []control.Reply{{ID: "r1", Text: s.text, Lang: "nl", State: "held",
		ReceivedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}}, nil
}

func (s *escReplies) RepliesPlay(context.Context, string) (control.RepliesResult, error) {
	return control.RepliesResult{Replies: []control.Reply{{ID: "r1", Text: s.text}}}, nil
}

func (s *escReplies) Stop(context.Context) (control.StopResult, error) {
	return control.StopResult{}, nil
}

// agoractl replies, replies play and buffer list print untrusted text with
// its control characters escaped: no raw escape reaches the terminal and
// each item stays on one line.
func TestPrintEscapesControlCharacters(t *testing.T) {
	for _, tc := range hostile {
		for _, args := range [][]string{{"replies"}, {"replies", "play", "r1"}, {"buffer", "list"}} {
			t.Run(tc.name+"/"+strings.Join(args, " "), func(t *testing.T) {
				f := controltest.NewFake(0)
				f.Records = []control.Record{{ID: "n1", Seq: 1, Text: tc.text, Lang: "nl", StartedAt: time.Now()}}
				code, out, errs := runCtl(t, append([]string{"--socket", controltest.Serve(t, &escReplies{f, tc.text})}, args...)...)
				if code != 0 {
					t.Fatalf("exit %d, stderr %q", code, errs)
				}
				if !strings.Contains(out, tc.want) {
					t.Errorf("stdout %q does not show %q", out, tc.want)
				}
				if strings.ContainsAny(out, "\x1b\r\t\u009b\u202e\a") {
					t.Errorf("stdout carries a raw control character: %q", out)
				}
				lines := strings.Count(strings.TrimRight(out, "\n"), "\n") + 1
				want := 2 // header and the item
				if args[0] == "replies" && len(args) > 1 {
					want = 1
				}
				if lines != want {
					t.Errorf("%d lines, want %d: %q", lines, want, out)
				}
			})
		}
	}
}

// escStatus is a daemon whose status carries hostile text where the device
// reports errors it did not write itself (speech engine, problems).
type escStatus struct {
	*controltest.Fake
	text string
}

func (s *escStatus) Status(ctx context.Context) (control.Status, error) {
	st, err := s.Fake.Status(ctx)
	st.Speech, st.Problems, st.Speaking = s.text, []string{s.text}, "r1"
	return st, err
}

// agoractl status shows the daemon's problem and speech texts escaped too:
// they carry error text from outside (a voice file's name, a broker's
// refusal).
func TestStatusEscapesControlCharacters(t *testing.T) {
	for _, tc := range hostile {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCtl(t, "--socket", controltest.Serve(t, &escStatus{controltest.NewFake(0), tc.text}), "status")
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, errs)
			}
			if strings.Count(out, tc.want) != 2 {
				t.Errorf("stdout does not show %q as problem and speech: %q", tc.want, out)
			}
			if strings.ContainsAny(out, "\x1b\r\t\u009b\u202e\a") {
				t.Errorf("stdout carries a raw control character: %q", out)
			}
		})
	}
}
