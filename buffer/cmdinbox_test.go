package buffer

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// The command inbox keeps accepted commands in order across a restart,
// forgets the ones done, and counts in MaxBytes.
func TestCommandInbox(t *testing.T) {
	s := openT(t, "", Options{Sync: SyncNone, MaxBytes: 40_000})
	var batch [][]byte
	for i := range 5 {
		batch = append(batch, []byte(fmt.Sprintf(`{"id":"c%d","type":"ping"}`, i)))
	}
	if err := s.AcceptCommands(batch[:3]); err != nil {
		t.Fatal(err)
	}
	if err := s.AcceptCommands(batch[3:]); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.InboxNotify():
	default:
		t.Error("no notification after AcceptCommands")
	}
	got, err := s.InboxCommands(2)
	if err != nil || len(got) != 2 || string(got[0].Payload) != string(batch[0]) || string(got[1].Payload) != string(batch[1]) {
		t.Fatalf("InboxCommands(2) = %+v %v", got, err)
	}
	if err := s.DoneCommand(got[0].N); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s)
	if n := s.InboxCount(); n != 4 {
		t.Errorf("%d commands after reopen, want 4", n)
	}
	all, err := s.InboxCommands(0)
	if err != nil || len(all) != 4 {
		t.Fatalf("after reopen: %d commands, %v", len(all), err)
	}
	for i, c := range all {
		if string(c.Payload) != string(batch[i+1]) {
			t.Errorf("command %d: %q, want %q", i, c.Payload, batch[i+1])
		}
	}
	// New commands continue after the stored ones.
	if err := s.AcceptCommands([][]byte{[]byte(`{"id":"c5","type":"ping"}`)}); err != nil {
		t.Fatal(err)
	}
	if all, _ = s.InboxCommands(0); len(all) != 5 || !strings.Contains(string(all[4].Payload), "c5") || all[4].N <= all[3].N {
		t.Errorf("after a new one: %+v", all)
	}
	big := [][]byte{[]byte(strings.Repeat("x", 50_000))}
	if err := s.AcceptCommands(big); !errors.Is(err, ErrFull) {
		t.Errorf("commands beyond MaxBytes: %v, want ErrFull", err)
	}
}
