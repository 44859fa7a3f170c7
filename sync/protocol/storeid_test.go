package protocol

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/buffer"
)

// TestStoreIDAndUnreadableEntries: every rendered message names the store
// incarnation; an entry the store could not read is refused by Render (so
// the uplink sends it as a dead letter) and RenderDeadLetter keeps its seq.
func TestStoreIDAndUnreadableEntries(t *testing.T) {
	const sid = "01a2061c-d327-7595-b098-28e6ab60af1e"
	ok := buffer.Entry{ID: "01a2061c-0000-7000-8000-000000000001", Seq: 9, Lane: buffer.LaneData, Kind: buffer.KindUtterance,
		CreatedAt: time.Now(), Body: []byte(`{"text":"scheur"}`), StoreID: sid}
	_, payload, err := Render("dev-1", ok)
	if err != nil {
		t.Fatal(err)
	}
	var env Envelope
	if err := json.Unmarshal(payload, &env); err != nil || env.StoreID != sid || env.Seq != 9 {
		t.Fatalf("envelope %+v (%v)", env, err)
	}
	_, st, err := RenderStatus("dev-1", "x", Status{Mode: "listen", StoreID: sid})
	if err != nil || !strings.Contains(string(st), `"store_id":"`+sid+`"`) {
		t.Fatalf("status %s (%v)", st, err)
	}

	bad := buffer.Entry{ID: "unreadable-1-10", Seq: 10, Lane: buffer.LaneData, StoreID: sid,
		Body: []byte{0x01, 0xff}, Unreadable: "value unreadable in the value log"}
	if _, _, err := Render("dev-1", bad); err == nil || !strings.Contains(err.Error(), "unreadable") {
		t.Fatalf("Render of an unreadable entry: %v", err)
	}
	topic, dl, err := RenderDeadLetter("dev-1", bad, "unreadable")
	if err != nil {
		t.Fatal(err)
	}
	var d DeadLetter
	if err := json.Unmarshal(dl, &d); err != nil || topic != "agora/v1/dev-1/events" || d.Type != TypeDeadLetter ||
		d.Seq != 10 || d.StoreID != sid || d.Body != "Af8=" {
		t.Fatalf("dead letter %s %s (%v)", topic, dl, err)
	}
}
