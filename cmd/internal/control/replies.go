package control

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Reply operations (issue 7).
const (
	OpReplies     = "replies"      // list recent replies with their outcome
	OpRepliesPlay = "replies.play" // speak a reply now (id), or every held one (no id)
	OpStop        = "stop"         // interrupt the reply being spoken
)

// ReplyHandler is implemented by a daemon that speaks replies. A Handler
// without it answers the reply operations with an error.
type ReplyHandler interface {
	Replies(ctx context.Context, limit int) (RepliesResult, error)
	RepliesPlay(ctx context.Context, id string) (RepliesResult, error)
	Stop(ctx context.Context) (StopResult, error)
}

// Reply is one reply from the backend as the device keeps it.
type Reply struct {
	ID         string    `json:"id"`
	InReplyTo  string    `json:"in_reply_to,omitempty"`
	Text       string    `json:"text"`
	Lang       string    `json:"lang"`
	Urgent     bool      `json:"urgent,omitempty"`
	State      string    `json:"state"` // queued, held, speaking, spoken, interrupted, expired, failed
	Reason     string    `json:"reason,omitempty"`
	Plays      int       `json:"plays"`
	ReceivedAt time.Time `json:"received_at"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// RepliesResult answers OpReplies (recent replies, oldest first) and
// OpRepliesPlay (the replies asked to be spoken).
type RepliesResult struct {
	Replies []Reply `json:"replies"`
}

// StopResult answers OpStop.
type StopResult struct {
	Interrupted string `json:"interrupted,omitempty"` // id of the reply stopped, "" when silent
}

var errNoReplies = errors.New("this daemon does not speak replies")

func handleReplyOp(ctx context.Context, h Handler, req Request) (any, error) {
	rh, ok := h.(ReplyHandler)
	if !ok {
		return nil, errNoReplies
	}
	switch req.Op {
	case OpReplies:
		return rh.Replies(ctx, req.Limit)
	case OpRepliesPlay:
		return rh.RepliesPlay(ctx, req.ID)
	case OpStop:
		return rh.Stop(ctx)
	}
	return nil, fmt.Errorf("op %q is not a reply operation", req.Op)
}

// Replies lists up to limit recent replies (0: server default).
func (c *Client) Replies(ctx context.Context, limit int) (RepliesResult, error) {
	var r RepliesResult
	return r, c.roundTrip(ctx, Request{Op: OpReplies, Limit: limit}, &r, nil)
}

// RepliesPlay speaks reply id now, or every held reply when id is "".
func (c *Client) RepliesPlay(ctx context.Context, id string) (RepliesResult, error) {
	var r RepliesResult
	return r, c.roundTrip(ctx, Request{Op: OpRepliesPlay, ID: id}, &r, nil)
}

// Stop interrupts the reply being spoken.
func (c *Client) Stop(ctx context.Context) (StopResult, error) {
	var r StopResult
	return r, c.roundTrip(ctx, Request{Op: OpStop}, &r, nil)
}
