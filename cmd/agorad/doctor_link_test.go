package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agora/agorad/cmd/internal/control"
	"github.com/agora/agorad/cmd/internal/control/controltest"
	"github.com/agora/agorad/configs"
)

// statusFake is a control daemon whose status is scripted.
type statusFake struct {
	*controltest.Fake
	st control.Status
}

func (f statusFake) Status(context.Context) (control.Status, error) { return f.st, nil }

func TestCheckLink(t *testing.T) {
	tests := []struct {
		name       string
		st         *control.Status // nil: no daemon running
		wantStatus string
		wantDetail string
	}{
		{"not running", nil, "ok", "not running"},
		{"clean", &control.Status{Outbox: 2}, "ok", "outbox 2, nothing parked"},
		{"parked", &control.Status{Outbox: 1, Parked: 1, ParkedEntries: []control.ParkedEntry{{ID: "019c-b", Seq: 41, Reason: "agent rejected it"}}},
			"warn", `1 outbox entries refused by the backend (parked as dead letters there) and kept on the device; first: seq 41 019c-b: "agent rejected it"`},
		{"unconfirmed", &control.Status{Outbox: 3, Unconfirmed: 3}, "warn", "3 outbox entries accepted by the broker but not confirmed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := configs.Default()
			cfg.Control.Socket = filepath.Join(t.TempDir(), "none.sock")
			if tc.st != nil {
				cfg.Control.Socket = controltest.Serve(t, statusFake{controltest.NewFake(0), *tc.st})
			}
			c := checkLink(context.Background(), cfg)
			if c.Name != "link" || c.Status != tc.wantStatus || !strings.Contains(c.Detail, tc.wantDetail) {
				t.Errorf("check %+v, want %s containing %q", c, tc.wantStatus, tc.wantDetail)
			}
		})
	}
}
