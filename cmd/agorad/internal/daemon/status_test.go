package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
)

// The retained status follows the listen buffer (a burst of notes gives a
// few statuses, not one each), and a (re)connect publishes one status, not
// two identical ones.
func TestStatusFollowsBufferOncePerConnect(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	b := brokertest.Start(t)
	p := brokertest.NewProxy(t, b.Addr())
	sub := b.Subscribe(t, "agora/v1/dev-test/status")
	cfg := testConfig(t, p.URL())
	cfg.Input.Source = "none"
	cfg.Mode = buffer.ModeListen
	d, _ := startDaemon(t, testOptions(cfg))
	statuses := func() (all []protocol.StatusMessage) {
		for _, m := range sub.Messages() {
			var s protocol.StatusMessage
			if json.Unmarshal(m.Payload, &s) == nil && s.Online {
				all = append(all, s)
			}
		}
		return all
	}
	waitStatus := func(what string, ok func(protocol.StatusMessage) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			if all := statuses(); len(all) > 0 && ok(all[len(all)-1]) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no status with %s; got %+v", what, statuses())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	const settle = 2500 * time.Millisecond // a second status, or a late one, shows by then
	connect := func(what string, act func()) {
		t.Helper()
		before := len(statuses())
		act()
		waitStatus("online after "+what, func(protocol.StatusMessage) bool { return len(statuses()) > before })
		time.Sleep(settle)
		if n := len(statuses()) - before; n != 1 {
			t.Errorf("%s: %d online statuses, want 1: %+v", what, n, statuses()[before:])
		}
	}
	connect("connect", func() {})

	say := func(text string) {
		t.Helper()
		if _, err := d.cmds.Say(context.Background(), text); err != nil {
			t.Fatal(err)
		}
	}
	say("first note")
	waitStatus("buffered 1", func(s protocol.StatusMessage) bool { return s.Buffered == 1 })
	before := len(statuses())
	const burst = 30
	for i := range burst {
		say(fmt.Sprintf("note %d", i))
	}
	waitStatus(fmt.Sprintf("buffered %d", burst+1), func(s protocol.StatusMessage) bool { return s.Buffered == burst+1 })
	time.Sleep(settle)
	if n := len(statuses()) - before; n > 3 {
		t.Errorf("a burst of %d notes published %d statuses, want a few (coalesced)", burst, n)
	}
	if last := statuses()[len(statuses())-1]; last.Buffered != burst+1 {
		t.Errorf("last status says buffered %d, want %d", last.Buffered, burst+1)
	}

	// A mode change publishes its own status (the flushed buffer: 0); the
	// buffer's change adds none.
	before = len(statuses())
	if _, err := d.cmds.SetMode(context.Background(), string(buffer.ModeFeedback)); err != nil {
		t.Fatal(err)
	}
	waitStatus("feedback, buffered 0", func(s protocol.StatusMessage) bool { return s.Mode == "feedback" && s.Buffered == 0 })
	time.Sleep(settle)
	if n := len(statuses()) - before; n != 1 {
		t.Errorf("a mode change that flushed the buffer published %d statuses, want 1: %+v", n, statuses()[before:])
	}
	if _, err := d.cmds.SetMode(context.Background(), string(buffer.ModeListen)); err != nil {
		t.Fatal(err)
	}
	waitStatus("listen", func(s protocol.StatusMessage) bool { return s.Mode == "listen" })

	connect("reconnect", func() {
		p.Cut()
		deadline := time.Now().Add(10 * time.Second)
		for d.up.Online() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		say("offline note") // asks for a status while offline
		time.Sleep(3 * bufferPoll)
		p.Restore()
	})
	if last := statuses()[len(statuses())-1]; last.Buffered != 1 {
		t.Errorf("status after reconnect says buffered %d, want 1 (the note said offline)", last.Buffered)
	}
}
