package daemon

import (
	"context"

	"github.com/agora/agorad/cmd/internal/control"
)

// OutboxDrop deletes an outbox entry the backend parked
// (control.ParkedHandler; agoractl outbox drop ID).
func (c *commands) OutboxDrop(ctx context.Context, id string) (control.DropResult, error) {
	p, err := c.up.DropParked(id)
	if err != nil {
		return control.DropResult{}, err
	}
	return control.DropResult{Dropped: control.ParkedEntry{ID: p.ID, Seq: p.Seq, Reason: p.Reason, At: p.At}}, nil
}
