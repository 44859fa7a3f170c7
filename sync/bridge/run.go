package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/agui"
	"github.com/agora/agorad/sync/protocol"
)

// runWithRetry runs in until it finishes, backing off between attempts, and
// gives up (the caller parks the message) after Retry's bounds.
// With st (an utterance whose answer is streamed) each attempt streams
// through it; a failure to keep or publish a part ends the retries with
// that error (the message is redelivered, not parked).
func (b *Bridge) runWithRetry(ctx context.Context, device string, env protocol.Envelope, in types.RunAgentInput, onWait func(), st *streamer) (agui.Result, int, error) {
	start := time.Now()
	backoff := b.o.Retry.Initial
	rejects := 0
	for attempt := 1; ; attempt++ {
		select {
		case b.runs <- struct{}{}:
		case <-ctx.Done():
			return agui.Result{}, attempt, ctx.Err()
		}
		rctx, cancel := context.WithTimeout(ctx, b.o.Retry.RunTimeout)
		t0 := time.Now()
		var res agui.Result
		var err error
		if st != nil {
			res, err = st.run(rctx, in)
		} else {
			res, err = b.o.Agent.Run(rctx, in)
		}
		cancel()
		<-b.runs
		if st != nil && st.err != nil {
			return res, attempt, st.err
		}
		if err == nil {
			b.m.Runs.WithLabelValues("ok").Inc()
			b.m.RunSeconds.Observe(time.Since(t0).Seconds())
			return res, attempt, nil
		}
		if ctx.Err() != nil {
			return res, attempt, ctx.Err()
		}
		kind := "error"
		var ae *agui.Error
		if errors.As(err, &ae) {
			kind = ae.Kind
		} else if errors.Is(err, context.DeadlineExceeded) {
			kind = "timeout"
		}
		b.m.Runs.WithLabelValues(kind).Inc()
		if kind == "garbage" || kind == "stream" {
			b.m.BadInput.WithLabelValues("agui_" + kind).Inc()
		}
		if agui.IsPermanent(err) || answerTooLarge(err) {
			rejects++
			if rejects >= b.o.Retry.RejectAttempts {
				return res, attempt, fmt.Errorf("rejected by the agent %d times: %w", rejects, err)
			}
		} else if time.Since(start) >= b.o.Retry.MaxElapsed {
			return res, attempt, fmt.Errorf("agent failing for %v (%d attempts): %w", time.Since(start).Round(time.Second), attempt, err)
		}
		b.m.Retries.WithLabelValues(kind).Inc()
		b.log.Warn("run failed; retrying", "device", device, "id", env.ID, "attempt", attempt, "in", backoff, "err", err)
		if onWait != nil {
			onWait()
		}
		// Full jitter keeps a fleet that failed together from retrying together.
		wait := backoff/2 + time.Duration(rand.Int64N(int64(backoff/2)+1))
		select {
		case <-ctx.Done():
			return res, attempt, ctx.Err()
		case <-time.After(wait):
		}
		backoff = min(backoff*2, b.o.Retry.Max)
	}
}

// answerTooLarge reports a run whose answer exceeded the AG-UI client's
// bounds (an SSE line or event larger than MaxEventBytes): the same input
// gets the same answer, so it is a rejection, not a transient failure to
// retry for retry.max_elapsed (a huge batch echoed back in the graph's
// state did that).
func answerTooLarge(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "SSE line too long") || strings.Contains(msg, "event larger than")
}

// utteranceInput is one feedback-mode turn (refgraph/README.md is the
// contract): the text as the one user message, with the device message id
// as its id (the graph's message list never holds it twice), runId derived
// from the message id, no context.
func (b *Bridge) utteranceInput(device string, u protocol.Utterance) types.RunAgentInput {
	fp := forwarded(device, u.Envelope)
	if u.Lang != "" {
		fp["lang"] = u.Lang
	}
	if u.Source != "" {
		fp["source"] = u.Source
	}
	return types.RunAgentInput{
		ThreadID: b.ThreadID(device), RunID: RunID(u.ID), State: map[string]any{},
		Messages: []types.Message{{ID: u.ID, Role: types.RoleUser, Content: u.Text}},
		Tools:    []types.Tool{}, Context: []types.Context{}, ForwardedProps: fp,
	}
}

// batchInput is a flushed listen buffer in the shape the AGORA web client
// replays an offline buffer: one user message with the notes in order, one
// per line, and the context isOfflineBatch / messageCount (AG-UI's list
// form; ag-ui-langgraph refuses the object form). The notes also go, with
// their ids, seqs, languages and offline flags, as JSON in "notes".
func (b *Bridge) batchInput(device string, bt protocol.Batch) types.RunAgentInput {
	lines := make([]string, len(bt.Items))
	type note struct {
		ID        string `json:"id"`
		Seq       uint64 `json:"seq"`
		Text      string `json:"text"`
		Lang      string `json:"lang,omitempty"`
		Offline   bool   `json:"offline"`
		StartedAt string `json:"started_at,omitempty"`
		CreatedAt string `json:"created_at,omitempty"`
	}
	notes := make([]note, len(bt.Items))
	for i, it := range bt.Items {
		lines[i] = it.Text
		notes[i] = note{ID: it.ID, Seq: it.Seq, Text: it.Text, Lang: it.Lang, Offline: it.Offline,
			StartedAt: it.StartedAt, CreatedAt: it.CreatedAt}
	}
	nj, _ := json.Marshal(notes)
	return types.RunAgentInput{
		ThreadID: b.ThreadID(device), RunID: RunID(bt.ID), State: map[string]any{},
		Messages: []types.Message{{ID: bt.ID, Role: types.RoleUser, Content: strings.Join(lines, "\n")}},
		Tools:    []types.Tool{},
		Context: []types.Context{
			{Description: "isOfflineBatch", Value: "true"},
			{Description: "messageCount", Value: strconv.Itoa(len(bt.Items))},
			{Description: "notes", Value: string(nj)},
		},
		ForwardedProps: forwarded(device, bt.Envelope),
	}
}

// RunID is the AG-UI runId of a device message, "run-" + the message id:
// a retried or redelivered run carries the same runId.
func RunID(messageID string) string { return "run-" + messageID }

// forwarded are the forwardedProps of a run. interactionMode is the mode the
// device was in when it produced the message: utterances and batches are
// only produced in feedback mode (listen-mode notes travel inside the batch
// flushed by "AGORA"), so it is always "feedback"; the device's status mode
// is not used, as a status can arrive after the message it preceded.
func forwarded(device string, env protocol.Envelope) map[string]any {
	return map[string]any{"interactionMode": string(buffer.ModeFeedback), "deviceId": device, "seq": env.Seq,
		"offline": env.Offline, "messageId": env.ID}
}
