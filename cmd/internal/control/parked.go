package control

import (
	"context"
	"errors"
)

// OpOutboxDrop removes one outbox entry the backend refused and parked
// (issue 27): the device keeps such an entry until the operator, having
// dealt with the bridge's copy (agora-bridge deadletters), drops it.
const OpOutboxDrop = "outbox.drop"

// ParkedHandler is implemented by a daemon whose uplink keeps parked
// entries. A Handler without it answers OpOutboxDrop with an error.
type ParkedHandler interface {
	// OutboxDrop deletes the parked entry id; any other id is refused.
	OutboxDrop(ctx context.Context, id string) (DropResult, error)
}

// DropResult answers OpOutboxDrop.
type DropResult struct {
	Dropped ParkedEntry `json:"dropped"`
}

var errNoParked = errors.New("this daemon keeps no parked entries")

func handleParkedOp(ctx context.Context, h Handler, req Request) (any, error) {
	ph, ok := h.(ParkedHandler)
	if !ok {
		return nil, errNoParked
	}
	return ph.OutboxDrop(ctx, req.ID)
}

// OutboxDrop deletes the parked outbox entry id.
func (c *Client) OutboxDrop(ctx context.Context, id string) (DropResult, error) {
	var r DropResult
	return r, c.roundTrip(ctx, Request{Op: OpOutboxDrop, ID: id}, &r, nil)
}
