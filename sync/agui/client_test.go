package agui_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"

	"github.com/agora/agorad/sync/agui"
	"github.com/agora/agorad/sync/agui/aguitest"
)

func input(text string) types.RunAgentInput {
	return types.RunAgentInput{ThreadID: "t1", RunID: "r1", State: map[string]any{},
		Messages: []types.Message{{ID: "m1", Role: types.RoleUser, Content: text}},
		Tools:    []types.Tool{}, Context: []types.Context{}, ForwardedProps: map[string]any{}}
}

func TestRun(t *testing.T) {
	const finished = `data: {"type":"RUN_STARTED","threadId":"t1","runId":"r1"}` + "\n\n" +
		`data: {"type":"STATE_SNAPSHOT","snapshot":{"final_written":"A"}}` + "\n\n"
	tests := []struct {
		name      string
		answer    *aguitest.Answer
		wantText  string
		wantKind  string // "" = success
		permanent bool
	}{
		{name: "echo", answer: nil, wantText: "echo: hello"},
		{name: "spoken", answer: &aguitest.Answer{Written: "long answer", Spoken: "short"}, wantText: "long answer"},
		{name: "final frame without blank line", answer: &aguitest.Answer{Raw: true,
			Body: finished + `data: {"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}`}, wantText: "A"},
		{name: "crlf, comments, event and id fields", answer: &aguitest.Answer{Raw: true,
			Body: ": hi\r\nevent: x\r\nid: 1\r\n" + strings.ReplaceAll(finished, "\n", "\r\n") +
				"data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t1\",\"runId\":\"r1\"}\r\n\r\n"}, wantText: "A"},
		{name: "unknown event types skipped", answer: &aguitest.Answer{Raw: true,
			Body: finished + "data: {\"type\":\"SUBAGENT_X\"}\n\ndata: {\"type\":\"RUN_FINISHED\"}\n\n"}, wantText: "A"},
		{name: "run error", answer: &aguitest.Answer{RunErr: "boom"}, wantKind: "run_error", permanent: true},
		{name: "422", answer: &aguitest.Answer{Status: 422, Body: "bad input"}, wantKind: "http", permanent: true},
		{name: "503", answer: &aguitest.Answer{Status: 503, Body: "down"}, wantKind: "http"},
		{name: "broken off", answer: &aguitest.Answer{Raw: true, Body: finished}, wantKind: "stream"},
		{name: "garbage json", answer: &aguitest.Answer{Raw: true, Body: finished + "data: {not json\n\n"}, wantKind: "garbage"},
		{name: "not sse", answer: &aguitest.Answer{Raw: true, Body: "<html>proxy error</html>\n"}, wantKind: "garbage"},
		{name: "huge line", answer: &aguitest.Answer{Raw: true, Body: "data: " + strings.Repeat("x", 5<<20) + "\n\n"}, wantKind: "garbage"},
		{name: "binary", answer: &aguitest.Answer{Raw: true, Body: "data: \x00\xff\xfe\n\n"}, wantKind: "garbage"},
	}
	srv := aguitest.Start()
	defer srv.Close()
	c := agui.New(srv.URL, 4, 10*time.Second)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv.SetBehaviour(func(types.RunAgentInput) *aguitest.Answer { return tt.answer })
			res, err := c.Run(context.Background(), input("hello"))
			if tt.wantKind == "" {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				got := res.StateString("final_written")
				if got == "" {
					got = res.Text
				}
				if got != tt.wantText {
					t.Fatalf("final_written %q, want %q (text %q)", got, tt.wantText, res.Text)
				}
				return
			}
			var e *agui.Error
			if !errors.As(err, &e) {
				t.Fatalf("Run error %v, want *agui.Error kind %s", err, tt.wantKind)
			}
			if e.Kind != tt.wantKind || e.Permanent != tt.permanent {
				t.Fatalf("error kind %s permanent %v, want %s %v (%v)", e.Kind, e.Permanent, tt.wantKind, tt.permanent, err)
			}
			if len(err.Error()) > 3*agui.ExcerptLen+200 {
				t.Fatalf("error message not bounded: %d bytes", len(err.Error()))
			}
		})
	}
}

func TestRunSpokenAndUnknownCount(t *testing.T) {
	srv := aguitest.Start()
	defer srv.Close()
	srv.SetBehaviour(func(types.RunAgentInput) *aguitest.Answer {
		return &aguitest.Answer{Written: "the written", Spoken: "the spoken"}
	})
	res, err := agui.New(srv.URL, 1, 5*time.Second).Run(context.Background(), input("x"))
	if err != nil {
		t.Fatal(err)
	}
	if res.StateString("final_spoken") != "the spoken" || res.Text != "the written" || res.Unknown != 1 || res.RunID != "r1" {
		t.Fatalf("result %+v", res)
	}
}

func TestRunUnreachable(t *testing.T) {
	srv := aguitest.Start()
	url := srv.URL
	srv.Close()
	_, err := agui.New(url, 1, 2*time.Second).Run(context.Background(), input("x"))
	var e *agui.Error
	if !errors.As(err, &e) || e.Kind != "connect" || e.Permanent {
		t.Fatalf("err %v, want transient connect error", err)
	}
}

func TestRunSlowIsTimeout(t *testing.T) {
	srv := aguitest.Start()
	defer srv.Close()
	srv.Delay = time.Second
	_, err := agui.New(srv.URL, 1, 100*time.Millisecond).Run(context.Background(), input("x"))
	if err == nil || agui.IsPermanent(err) {
		t.Fatalf("err %v, want a transient error", err)
	}
}
