package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/cmd/internal/control"
	"github.com/agora/agorad/cmd/internal/control/controltest"
)

// speaker is a fake daemon that speaks replies.
type speaker struct {
	*controltest.Fake
	calls []string
}

func (s *speaker) Replies(_ context.Context, limit int) (control.RepliesResult, error) {
	s.calls = append(s.calls, "replies")
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return control.RepliesResult{Replies: []control.Reply{
		{ID: "r1", Text: "Ja, dat klopt.", Lang: "nl", State: "spoken", ReceivedAt: at},
		{ID: "r2", Text: "No voice.", Lang: "en", State: "failed", Reason: "speaker: no device", ReceivedAt: at},
	}}, nil
}

func (s *speaker) RepliesPlay(_ context.Context, id string) (control.RepliesResult, error) {
	s.calls = append(s.calls, "play "+id)
	if id == "" {
		return control.RepliesResult{}, nil
	}
	return control.RepliesResult{Replies: []control.Reply{{ID: id, Text: "Ja, dat klopt."}}}, nil
}

func (s *speaker) Stop(context.Context) (control.StopResult, error) {
	s.calls = append(s.calls, "stop")
	return control.StopResult{Interrupted: "r3"}, nil
}

func TestReplyCommands(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		out  string
		call string
	}{
		{[]string{"replies"}, 0, "2026-01-02 03:04:05  r1  nl    spoken", "replies"},
		{[]string{"replies"}, 0, "failed (speaker: no device)", "replies"},
		{[]string{"replies", "play", "r1"}, 0, "speaking r1: Ja, dat klopt.", "play r1"},
		{[]string{"replies", "play"}, 0, "no reply waiting", "play "},
		{[]string{"stop"}, 0, "stopped reply r3", "stop"},
		{[]string{"replies", "play", "a", "b"}, 2, "", ""},
		{[]string{"replies", "delete"}, 2, "", ""},
		{[]string{"stop", "now"}, 2, "", ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			s := &speaker{Fake: controltest.NewFake(0)}
			code, out, errs := runCtl(t, append([]string{"--socket", controltest.Serve(t, s)}, tc.args...)...)
			if code != tc.code || !strings.Contains(out, tc.out) {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
			}
			if got := strings.Join(s.calls, ","); got != tc.call {
				t.Errorf("calls %q, want %q", got, tc.call)
			}
		})
	}
	// A daemon that does not speak replies says so.
	code, _, errs := runCtl(t, "--socket", controltest.Serve(t, controltest.NewFake(0)), "stop")
	if code != 1 || !strings.Contains(errs, "does not speak replies") {
		t.Errorf("stop on a daemon without replies: %d %q", code, errs)
	}
}
