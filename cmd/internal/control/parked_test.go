package control_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/cmd/internal/control"
	"github.com/agora/agorad/cmd/internal/control/controltest"
)

// dropper is a daemon that keeps one parked entry.
type dropper struct{ *controltest.Fake }

func (dropper) OutboxDrop(_ context.Context, id string) (control.DropResult, error) {
	if id != "p1" {
		return control.DropResult{}, &notParked{id}
	}
	return control.DropResult{Dropped: control.ParkedEntry{ID: "p1", Seq: 4, Reason: "rejected", At: time.Unix(1, 0)}}, nil
}

type notParked struct{ id string }

func (e *notParked) Error() string { return "outbox entry " + e.id + " is not parked" }

func TestOutboxDrop(t *testing.T) {
	tests := []struct {
		name    string
		h       control.Handler
		id      string
		wantErr string
		wantSeq uint64
	}{
		{"parked", dropper{controltest.NewFake(0)}, "p1", "", 4},
		{"not parked", dropper{controltest.NewFake(0)}, "q", "is not parked", 0},
		{"no id", dropper{controltest.NewFake(0)}, " ", "id: missing", 0},
		{"daemon without parked entries", controltest.NewFake(0), "p1", "keeps no parked entries", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := control.Dial(controltest.Serve(t, tc.h))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			r, err := c.OutboxDrop(context.Background(), tc.id)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || r.Dropped.Seq != tc.wantSeq || r.Dropped.Reason != "rejected" {
				t.Fatalf("result %+v, err %v", r, err)
			}
		})
	}
}
