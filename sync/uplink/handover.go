package uplink

import (
	"context"
	"fmt"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// handOver is cli.Publish at QoS 1 that gives up when the session ends (lost
// fires, or ctx is done). paho's Publish waits up to its write timeout
// (Options.PublishTimeout, 30s by default) to hand a message to a connection
// that dropped while it was handing it over, and the reconnect and the
// daemon's shutdown waited as long. The Publish call left behind returns by
// itself at that timeout, on the old session's client; what it carried is
// still in the outbox and goes again on the next session.
func handOver(ctx context.Context, cli paho.Client, topic string, retained bool, payload []byte, lost <-chan error) (paho.Token, error) {
	done := make(chan paho.Token, 1)
	go func() { done <- cli.Publish(topic, 1, retained, payload) }()
	select {
	case tok := <-done:
		return tok, nil
	case err := <-lost:
		return nil, fmt.Errorf("connection lost: %w", err)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// publishWait is handOver, then wait for the PUBACK: one message published
// and confirmed by the broker within timeout, or an error.
func publishWait(ctx context.Context, cli paho.Client, topic string, retained bool, payload []byte, timeout time.Duration, lost <-chan error) error {
	tok, err := handOver(ctx, cli, topic, retained, payload, lost)
	if err != nil {
		return err
	}
	return wait(ctx, tok, timeout, lost)
}
