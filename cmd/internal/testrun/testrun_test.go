package testrun

import (
	"context"
	"errors"
	"testing"
)

func TestStopCancelsAndReturnsTheError(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name string
		ret  error
	}{
		{"clean stop", nil},
		{"error on stop", boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Start(t, "part", func(ctx context.Context) error { <-ctx.Done(); return tt.ret })
			select {
			case <-r.Done():
				t.Fatal("done before Stop")
			default:
			}
			if err := r.Stop(); !errors.Is(err, tt.ret) {
				t.Fatalf("Stop = %v, want %v", err, tt.ret)
			}
			if err := r.Stop(); !errors.Is(err, tt.ret) {
				t.Fatalf("second Stop = %v, want %v", err, tt.ret)
			}
		})
	}
}

func TestDoneWhenThePartEndsOnItsOwn(t *testing.T) {
	r := Start(t, "part", func(context.Context) error { return context.DeadlineExceeded })
	<-r.Done()
	if !errors.Is(r.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err = %v", r.Err())
	}
}
