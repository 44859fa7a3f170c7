package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agora/agorad/cmd/internal/control"
	"github.com/agora/agorad/configs"
)

// errAsk marks a running agorad that did not answer its status.
var errAsk = errors.New("ask the running agorad")

// runningStatus asks the running agorad for its status over the control
// socket: control.ErrNotRunning when none runs, the dial's error when its
// socket is not ours to open, errAsk when it does not answer.
func runningStatus(ctx context.Context, cfg *configs.Config) (control.Status, error) {
	c, err := control.Dial(cfg.Control.Socket)
	if err != nil {
		return control.Status{}, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := c.Status(ctx)
	if err != nil {
		return control.Status{}, fmt.Errorf("%w: %w", errAsk, err)
	}
	return st, nil
}

// checkLink asks a running agorad (over its control socket) what its link
// holds back: outbox entries the backend refused and parked as dead letters
// (kept on the device, issue 27) and entries the backend never confirmed.
// Only the running daemon knows (the bridge tells it); a daemon that is not
// running is no finding.
func checkLink(ctx context.Context, cfg *configs.Config) check {
	st, err := runningStatus(ctx, cfg)
	switch {
	case errors.Is(err, control.ErrNotRunning):
		return check{"link", "ok", "agorad is not running: nothing parked or unconfirmed to report", ""}
	case errors.Is(err, errAsk):
		return check{"link", "warn", err.Error(), ""}
	case err != nil:
		return check{"link", "warn", err.Error(), "run doctor as a member of group agorad to see what the running daemon holds back"}
	}
	switch {
	case st.Parked > 0:
		detail := fmt.Sprintf("%d outbox entries refused by the backend (parked as dead letters there) and kept on the device", st.Parked)
		if len(st.ParkedEntries) > 0 {
			p := st.ParkedEntries[0]
			detail += fmt.Sprintf("; first: seq %d %s: %q", p.Seq, p.ID, p.Reason)
		}
		return check{"link", "warn", detail, "agora-bridge deadletters on the bridge shows each with its content and reason; agoractl status lists them here"}
	case st.Unconfirmed > 0:
		return check{"link", "warn", fmt.Sprintf("%d outbox entries accepted by the broker but not confirmed by the backend", st.Unconfirmed),
			"check the broker's ACLs and that agora-bridge runs"}
	}
	return check{"link", "ok", fmt.Sprintf("agorad running: outbox %d, nothing parked or unconfirmed", st.Outbox), ""}
}
