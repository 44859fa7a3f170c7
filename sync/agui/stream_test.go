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

// RunStream hands the written deltas, message starts and the graph's
// spoken deltas (CUSTOM agora:spoken_text_content, object or string value) to the
// sink in stream order; other CUSTOM events are not spoken; a sink error
// ends the run with that error.
func TestRunStream(t *testing.T) {
	ev := func(s string) string { return "data: " + s + "\n\n" }
	body := ev(`{"type":"RUN_STARTED","threadId":"t1","runId":"r1"}`) +
		ev(`{"type":"TEXT_MESSAGE_START","messageId":"a","role":"assistant"}`) +
		ev(`{"type":"TEXT_MESSAGE_CONTENT","messageId":"a","delta":"Hello "}`) +
		ev(`{"type":"CUSTOM","name":"agora:spoken_text_content","value":{"messageId":"m1","delta":"Hi "}}`) +
		ev(`{"type":"TEXT_MESSAGE_CONTENT","messageId":"a","delta":"there."}`) +
		ev(`{"type":"CUSTOM","name":"agora:spoken_text_content","value":"you."}`) +
		ev(`{"type":"CUSTOM","name":"something_else","value":{"delta":"no"}}`) +
		ev(`{"type":"TEXT_MESSAGE_END","messageId":"a"}`) +
		ev(`{"type":"RUN_FINISHED","threadId":"t1","runId":"r1"}`)
	srv := aguitest.Start()
	defer srv.Close()
	srv.SetBehaviour(func(types.RunAgentInput) *aguitest.Answer { return &aguitest.Answer{Raw: true, Body: body} })
	c := agui.New(srv.URL, 4, 10*time.Second)
	var got []string
	res, err := c.RunStream(context.Background(), input("hello"), func(kind, delta string) error {
		got = append(got, kind+":"+delta)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "start:|text:Hello |spoken:Hi |text:there.|spoken:you."
	if strings.Join(got, "|") != want {
		t.Errorf("sink got %q, want %q", strings.Join(got, "|"), want)
	}
	if res.Text != "Hello there." {
		t.Errorf("Text %q", res.Text)
	}
	stop := errors.New("broker gone")
	_, err = c.RunStream(context.Background(), input("hello"), func(kind, delta string) error { return stop })
	if !errors.Is(err, stop) {
		t.Errorf("a sink error ended the run with %v, want it as is", err)
	}
}
