package daemon

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
)

// Issue 27: a typed English note in feedback mode was sent without a
// language and the reply to it (no lang from the backend) was labelled and
// spoken as replies.language (nl). The note now carries its guessed
// language, and the reply falls back to it.
func TestTypedNoteLanguage(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto, espeak-ng and PortAudio")
	}
	testaudio.NewVirtualMic(t, nil)
	broker := brokertest.Start(t)
	cfg := replyConfig(t, broker.URL())
	cfg.Replies.Language = "nl"
	be := newBackend(t, broker, cfg.DeviceID)
	d, _ := runDaemon(t, Options{Config: cfg})
	ctl := d.cmds
	for i, tc := range []struct {
		name, text, want string
	}{
		{"English", "The fire door on level three does not close.", "en"},
		{"Dutch", "De branddeur op de derde verdieping sluit niet.", "nl"},
		{"no evidence falls back to replies.language", "12 mm", "nl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := ctl.Say(context.Background(), tc.text)
			if err != nil || res.Stored != "outbox" {
				t.Fatalf("say: %+v %v", res, err)
			}
			var utt struct{ ID, Text, Lang string }
			deadline := time.Now().Add(10 * time.Second)
			for utt.ID != res.ID && time.Now().Before(deadline) {
				if msgs := be.utterances.Messages(); len(msgs) > i {
					json.Unmarshal(msgs[i].Payload, &utt)
				} else {
					time.Sleep(20 * time.Millisecond)
				}
			}
			if utt.ID != res.ID {
				t.Fatalf("utterance %s not published (last %+v)", res.ID, utt)
			}
			wantUtt := tc.want
			if tc.text == "12 mm" {
				wantUtt = "" // no guess: the utterance claims no language
			}
			if utt.Lang != wantUtt {
				t.Errorf("utterance lang %q, want %q", utt.Lang, wantUtt)
			}
			id := "r-" + res.ID
			be.reply(protocol.ReplyCommand{ID: id, InReplyTo: res.ID, Text: "OK."})
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				list, err := ctl.Replies(context.Background(), 0)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range list.Replies {
					if r.ID == id {
						if r.Lang != tc.want {
							t.Errorf("reply to %q labelled %q, want %q", tc.text, r.Lang, tc.want)
						}
						return
					}
				}
			}
			t.Fatalf("reply %s never stored", id)
		})
	}
}
