package control_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agora/agorad/cmd/internal/control"
	"github.com/agora/agorad/cmd/internal/control/controltest"
)

// speaker is a Fake daemon that also speaks replies.
type speaker struct {
	*controltest.Fake
	played []string
}

func (s *speaker) Replies(_ context.Context, limit int) (control.RepliesResult, error) {
	return control.RepliesResult{Replies: []control.Reply{{ID: "r1", Text: "Ja.", Lang: "nl", State: "spoken", Plays: limit}}}, nil
}

func (s *speaker) RepliesPlay(_ context.Context, id string) (control.RepliesResult, error) {
	s.played = append(s.played, id)
	return control.RepliesResult{Replies: []control.Reply{{ID: id}}}, nil
}

func (s *speaker) Stop(context.Context) (control.StopResult, error) {
	return control.StopResult{Interrupted: "r9"}, nil
}

func TestReplyOperations(t *testing.T) {
	s := &speaker{Fake: controltest.NewFake(0)}
	c := dial(t, controltest.Serve(t, s))
	list, err := c.Replies(ctx(t), 7)
	if err != nil || len(list.Replies) != 1 || list.Replies[0].State != "spoken" || list.Replies[0].Plays != 7 {
		t.Fatalf("Replies: %+v %v", list, err)
	}
	if _, err := c.RepliesPlay(ctx(t), "r1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RepliesPlay(ctx(t), ""); err != nil {
		t.Fatal(err)
	}
	if strings.Join(s.played, ",") != "r1," {
		t.Errorf("played %q", s.played)
	}
	if st, err := c.Stop(ctx(t)); err != nil || st.Interrupted != "r9" {
		t.Errorf("Stop: %+v %v", st, err)
	}
	if _, err := c.Replies(ctx(t), -1); err == nil {
		t.Error("negative limit accepted")
	}
	// A daemon without replies says so.
	plain := dial(t, controltest.Serve(t, controltest.NewFake(0)))
	if _, err := plain.Stop(ctx(t)); err == nil || !strings.Contains(err.Error(), "does not speak replies") {
		t.Errorf("Stop on a daemon without replies: %v", err)
	}
}
