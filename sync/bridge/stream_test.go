package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"

	"github.com/agora/agorad/sync/agui"
	"github.com/agora/agorad/sync/protocol"
)

// scriptAgent streams deltas through the sink, then finishes (or fails
// with fail after failAfter deltas). during, when set, runs after each
// delta (tests look at what was published meanwhile).
type scriptAgent struct {
	deltas    []string
	kind      string // agui.StreamText (default) or agui.StreamSpoken
	fail      error
	failAfter int
	during    func(i int)
	runs      int
}

func (a *scriptAgent) Run(ctx context.Context, in types.RunAgentInput) (agui.Result, error) {
	return a.RunStream(ctx, in, nil)
}

func (a *scriptAgent) RunStream(ctx context.Context, in types.RunAgentInput, sink agui.Sink) (agui.Result, error) {
	a.runs++
	kind := a.kind
	if kind == "" {
		kind = agui.StreamText
	}
	var text strings.Builder
	for i, d := range a.deltas {
		if a.fail != nil && i == a.failAfter {
			return agui.Result{Text: text.String()}, a.fail
		}
		text.WriteString(d)
		if sink != nil {
			if err := sink(kind, d); err != nil {
				return agui.Result{Text: text.String()}, err
			}
		}
		if a.during != nil {
			a.during(i)
		}
	}
	all := strings.Join(a.deltas, "")
	return agui.Result{Text: all, State: map[string]any{"final_written": all, "final_spoken": all}}, nil
}

// recPublisher records the commands published; failAt > 0 fails that
// publish call (1-based) and every one after it.
type recPublisher struct {
	mu     sync.Mutex
	calls  int
	failAt int
	cmds   []protocol.ReplyCommand
}

func (p *recPublisher) Publish(ctx context.Context, topic string, payloads ...[]byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if p.failAt > 0 && p.calls >= p.failAt {
		return errors.New("broker gone")
	}
	for _, raw := range payloads {
		var c protocol.ReplyCommand
		_ = json.Unmarshal(raw, &c)
		p.cmds = append(p.cmds, c)
	}
	return nil
}

func (p *recPublisher) ids() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, c := range p.cmds {
		out = append(out, c.ID)
	}
	return out
}

func streamBridge(t *testing.T, dir string, agent Agent, pub Publisher, mode string) (*Bridge, *BadgerStore) {
	t.Helper()
	st, err := OpenBadger(dir, false, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Options{Agent: agent, Store: st, Publisher: pub, Logger: slog.New(slog.DiscardHandler),
		StreamReplies: mode, Retry: Retry{Initial: time.Millisecond, Max: time.Millisecond, MaxElapsed: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return b, st
}

func streamUtterance(id string) []byte {
	u := protocol.Utterance{Envelope: protocol.Envelope{V: 1, Type: protocol.TypeUtterance, ID: id, Seq: 1, DeviceID: "dev-1",
		CreatedAt: protocol.FormatTime(time.Now())}, Text: "is this railing high enough?", Lang: "en", Source: "typed"}
	b, _ := json.Marshal(u)
	return b
}

const streamTopic = "agora/v1/dev-1/utterances"

var answer = []string{"You said: is this ", "railing high enough? ", "It should be ", "one metre ten. ", "Check the ", "posts."}

func TestStreamedAnswer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mode   string
		kind   string
		deltas []string
		want   []string // ids published, in order
		texts  []string // their texts (reply parts only)
		midRun int      // parts published before the run ended
	}{
		{"written text in sentence parts", StreamWritten, agui.StreamText, answer,
			[]string{"reply-m1.s1", "reply-m1.s2", "reply-m1.s3e", "ack-m1"},
			[]string{"You said: is this railing high enough?", "It should be one metre ten.", "Check the posts."}, 2},
		{"spoken stream", StreamSpoken, agui.StreamSpoken, answer,
			[]string{"reply-m1.s1", "reply-m1.s2", "reply-m1.s3e", "ack-m1"}, nil, 2},
		{"spoken mode, graph streams only written text: as before", StreamSpoken, agui.StreamText, answer,
			[]string{"reply-m1", "ack-m1"}, nil, 0},
		{"off", StreamOff, agui.StreamSpoken, answer, []string{"reply-m1", "ack-m1"}, nil, 0},
		{"one sentence: whole, as before", StreamWritten, agui.StreamText, []string{"Yes, ", "it is."},
			[]string{"reply-m1", "ack-m1"}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pub := &recPublisher{}
			agent := &scriptAgent{deltas: tc.deltas, kind: tc.kind}
			mid := 0
			agent.during = func(int) { mid = len(pub.ids()) }
			b, st := streamBridge(t, t.TempDir(), agent, pub, tc.mode)
			defer st.Close()
			if err := b.Handle(context.Background(), streamTopic, streamUtterance("m1"), nil); err != nil {
				t.Fatal(err)
			}
			if got := pub.ids(); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("published %v, want %v", got, tc.want)
			}
			for i, want := range tc.texts {
				if pub.cmds[i].Text != want || pub.cmds[i].InReplyTo != "m1" || pub.cmds[i].Lang != "en" {
					t.Errorf("part %d: %+v, want text %q", i+1, pub.cmds[i], want)
				}
			}
			if mid != tc.midRun {
				t.Errorf("%d parts published while the graph wrote, want %d", mid, tc.midRun)
			}
			if kept, _ := st.StreamParts("dev-1", "m1"); len(kept) != 0 {
				t.Errorf("%d streamed parts still kept after the commit", len(kept))
			}
			// A duplicate re-sends the same parts under the same ids.
			pub.cmds = nil
			if err := b.Handle(context.Background(), streamTopic, streamUtterance("m1"), nil); err != nil {
				t.Fatal(err)
			}
			if got := pub.ids(); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("duplicate re-sent %v, want %v", got, tc.want)
			}
			if agent.runs != 1 {
				t.Errorf("graph ran %d times", agent.runs)
			}
		})
	}
}

// The bridge stops mid-answer (its broker fails after two parts, the
// process ends); the next bridge on the same state re-sends the parts kept
// under their ids and goes on after them: the device gets every number
// once, with one text, and the rest of the answer.
func TestStreamedAnswerAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	long := []string{"One is first. ", "Two is next. ", "Three comes. ", "Four follows. ", "Five ends."}
	pub1 := &recPublisher{failAt: 3} // part 1, part 2, then the broker is gone
	b1, st1 := streamBridge(t, dir, &scriptAgent{deltas: long}, pub1, StreamWritten)
	if err := b1.Handle(context.Background(), streamTopic, streamUtterance("m1"), nil); err == nil {
		t.Fatal("Handle succeeded with the broker gone; want an error (redelivery)")
	}
	kept, err := st1.StreamParts("dev-1", "m1")
	if err != nil || len(kept) != 3 {
		t.Fatalf("kept %d parts (%v), want 3 (the third kept before its publish failed)", len(kept), err)
	}
	st1.Close()

	pub2 := &recPublisher{}
	b2, st2 := streamBridge(t, dir, &scriptAgent{deltas: long}, pub2, StreamWritten)
	defer st2.Close()
	if err := b2.Handle(context.Background(), streamTopic, streamUtterance("m1"), nil); err != nil {
		t.Fatal(err)
	}
	want := "reply-m1.s1 reply-m1.s2 reply-m1.s3 reply-m1.s4 reply-m1.s5e ack-m1"
	if got := strings.Join(pub2.ids(), " "); got != want {
		t.Fatalf("after the restart published %s, want %s", got, want)
	}
	texts := map[string]string{}
	for _, c := range append(pub1.cmds, pub2.cmds...) {
		if prev, ok := texts[c.ID]; ok && prev != c.Text {
			t.Errorf("%s sent with two texts: %q and %q", c.ID, prev, c.Text)
		}
		texts[c.ID] = c.Text
	}
	var heard []string
	for i := 1; i <= 5; i++ {
		id := protocol.StreamPartID("reply-m1", i, i == 5)
		heard = append(heard, texts[id])
	}
	if got := strings.Join(heard, " "); got != strings.TrimSpace(strings.Join(long, "")) {
		t.Errorf("the device hears %q", got)
	}
	if kept, _ := st2.StreamParts("dev-1", "m1"); len(kept) != 0 {
		t.Errorf("%d streamed parts kept after the commit", len(kept))
	}
}

// A run that fails mid-answer: the parts sent stand, a short notice closes
// the answer in the ear, and the message is parked as any failed run.
func TestStreamedAnswerRunFails(t *testing.T) {
	pub := &recPublisher{}
	agent := &scriptAgent{deltas: answer, fail: &agui.Error{Kind: "run_error", Permanent: true, Msg: "RUN_ERROR: boom"}, failAfter: 4}
	b, st := streamBridge(t, t.TempDir(), agent, pub, StreamWritten)
	defer st.Close()
	if err := b.Handle(context.Background(), streamTopic, streamUtterance("m1"), nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range pub.cmds {
		got = append(got, fmt.Sprintf("%s/%s:%s", c.ID, c.Type, c.Text))
	}
	want := []string{"reply-m1.s1/reply:You said: is this railing high enough?",
		"reply-m1.s2e/reply:" + restFailed("en"), "parked-m1/parked:", "ack-m1/ack:"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("published\n %q\nwant\n %q", got, want)
	}
	rec, found, err := st.Get("dev-1", "m1")
	if err != nil || !found || rec.State != StateParked || len(rec.Stream) != 2 {
		t.Fatalf("record %+v found=%v err=%v, want parked with 2 parts", rec, found, err)
	}
	if dls, _ := st.DeadLetters(0); len(dls) != 1 {
		t.Errorf("%d dead letters, want 1", len(dls))
	}
}
