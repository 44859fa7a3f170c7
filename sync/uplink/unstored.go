package uplink

import (
	"context"
	"errors"
	"fmt"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// ErrOffline: no MQTT session to publish on.
var ErrOffline = errors.New("not connected to the MQTT broker")

func (c *Client) setCurrent(cli paho.Client) {
	c.mu.Lock()
	c.cur = cli
	c.mu.Unlock()
}

// PublishUnstored publishes a message that is not in the outbox (the
// store failed: protocol.RenderUnstored) on the current session, QoS 1, not
// retained, and waits for the broker's PUBACK: callers that publish one at
// a time get them to the broker in order. Nothing keeps it: an error
// (ErrOffline, a timeout, the connection lost) means it was perhaps not
// delivered, and the caller keeps or refuses it.
func (c *Client) PublishUnstored(ctx context.Context, topic string, payload []byte) error {
	c.mu.Lock()
	cli := c.cur
	c.mu.Unlock()
	if cli == nil || !c.Online() {
		return ErrOffline
	}
	if err := publishWait(ctx, cli, topic, false, payload, c.opts.PublishTimeout, nil); err != nil {
		return fmt.Errorf("publish unstored message on %s: %w", topic, err)
	}
	c.published.Add(1)
	return nil
}
