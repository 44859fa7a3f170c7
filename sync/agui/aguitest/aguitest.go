// Package aguitest is an in-process AG-UI agent for tests and benchmarks:
// it records every RunAgentInput, answers with the event sequence
// ag-ui-langgraph sends (RUN_STARTED, STATE_SNAPSHOT, TEXT_MESSAGE_*, the
// final STATE_SNAPSHOT with final_written/final_spoken, RUN_FINISHED), and
// can be told to fail, delay, or break its stream. It is a test double; the
// integration tests run the reference graph (refgraph/).
package aguitest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"
)

// Behaviour decides how one run is answered. nil from Respond means the
// default echo answer.
type Behaviour func(in types.RunAgentInput) *Answer

// Answer is a scripted response.
type Answer struct {
	Status  int    // HTTP status other than 200: the body is Body
	Body    string // raw body (Status != 200) or raw SSE text (Raw)
	Raw     bool   // write Body as the stream as is
	RunErr  string // send RUN_ERROR with this message
	Written string // final_written (default: "echo: " + the user text)
	Spoken  string
}

// Server is a running fake agent.
type Server struct {
	*httptest.Server
	Delay time.Duration // before answering each run
	// Idempotent makes a run whose runId already finished answer with the
	// stored answer without counting as an effective run, the way the
	// reference graph treats a redelivered message.
	Idempotent bool

	mu        sync.Mutex
	runs      []types.RunAgentInput
	behave    Behaviour
	inflight  map[string]int    // per thread: concurrent runs now
	finished  map[string]string // runId -> final_written (Idempotent)
	effective map[string]int    // runId -> effective runs
	overlap   int               // runs that overlapped another on the same thread
}

// Start serves the fake agent on a loopback port; Close stops it.
func Start() *Server {
	s := &Server{inflight: map[string]int{}, finished: map[string]string{}, effective: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// SetBehaviour replaces the answer script (nil: echo).
func (s *Server) SetBehaviour(b Behaviour) {
	s.mu.Lock()
	s.behave = b
	s.mu.Unlock()
}

// Runs returns every input received, in arrival order.
func (s *Server) Runs() []types.RunAgentInput {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]types.RunAgentInput(nil), s.runs...)
}

// Overlaps is the number of runs that started while another run of the same
// thread was in progress (the bridge must serialise runs per device).
func (s *Server) Overlaps() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.overlap
}

// UserText returns the content of the last user message of in.
func UserText(in types.RunAgentInput) string {
	for i := len(in.Messages) - 1; i >= 0; i-- {
		if in.Messages[i].Role == types.RoleUser {
			if s, ok := in.Messages[i].Content.(string); ok {
				return s
			}
		}
	}
	return ""
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var in types.RunAgentInput
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, "bad RunAgentInput: "+err.Error(), http.StatusUnprocessableEntity)
		return
	}
	s.mu.Lock()
	s.runs = append(s.runs, in)
	if s.inflight[in.ThreadID] > 0 {
		s.overlap++
	}
	s.inflight[in.ThreadID]++
	behave, delay := s.behave, s.Delay
	replay, isReplay := s.finished[in.RunID]
	isReplay = isReplay && s.Idempotent
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inflight[in.ThreadID]--
		s.mu.Unlock()
	}()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	var a *Answer
	if behave != nil {
		a = behave(in)
	}
	if a == nil {
		a = &Answer{}
	}
	if isReplay {
		a = &Answer{Written: replay}
	}
	if a.Status != 0 && a.Status != http.StatusOK {
		http.Error(w, a.Body, a.Status)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	if a.Raw {
		_, _ = io.WriteString(w, a.Body)
		return
	}
	written := a.Written
	if written == "" {
		written = "echo: " + UserText(in)
	}
	send := func(e events.Event) {
		b, _ := e.ToJSON()
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	send(events.NewRunStartedEvent(in.ThreadID, in.RunID))
	send(events.NewStateSnapshotEvent(map[string]any{"final_written": map[string]any{"type": "__overwrite__"}}))
	if a.RunErr != "" {
		send(events.NewRunErrorEvent(a.RunErr))
		return
	}
	mid := "msg-" + in.RunID
	send(events.NewTextMessageStartEvent(mid))
	for _, part := range strings.SplitAfter(written, " ") {
		send(events.NewTextMessageContentEvent(mid, part))
	}
	send(events.NewTextMessageEndEvent(mid))
	fmt.Fprintf(w, "data: {\"type\":\"SUBAGENT_STARTED\",\"name\":\"x\"}\n\n") // unknown to the SDK
	send(events.NewStateSnapshotEvent(map[string]any{"final_written": written, "final_spoken": a.Spoken}))
	if !isReplay {
		s.mu.Lock()
		s.finished[in.RunID] = written
		s.effective[in.RunID]++
		s.mu.Unlock()
	}
	send(events.NewRunFinishedEvent(in.ThreadID, in.RunID))
}

// Effective returns, per runId, how many runs finished other than as an
// idempotent replay.
func (s *Server) Effective() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.effective))
	for k, v := range s.effective {
		out[k] = v
	}
	return out
}

// WaitRuns waits until at least n runs arrived.
func (s *Server) WaitRuns(ctx context.Context, n int) bool {
	for {
		if len(s.Runs()) >= n {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
}
