package protocol

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseReply(t *testing.T) {
	long := strings.Repeat("a", MaxReplyTextBytes+1)
	for _, tc := range []struct {
		name, payload string
		field         string // "" = valid
		want          Reply
	}{
		{name: "minimal", payload: `{"id":"r1","type":"reply","text":"Ja, dat is constructief."}`,
			want: Reply{ID: "r1", Text: "Ja, dat is constructief."}},
		{name: "full", payload: `{"v":1,"device_id":"dev","id":"r2","type":"reply","in_reply_to":"u-9","text":"Yes.","spoken":"Yes indeed.","lang":"en","urgent":true,"expires_at":"2026-03-01T10:00:00+01:00"}`,
			want: Reply{ID: "r2", InReplyTo: "u-9", Text: "Yes.", Spoken: "Yes indeed.", Lang: "en", Urgent: true,
				ExpiresAt: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}},
		{name: "markup is text", payload: `{"id":"r3","type":"reply","text":"<speak>hi</speak> \u0007"}`,
			want: Reply{ID: "r3", Text: "<speak>hi</speak> \a"}},
		{name: "missing text", payload: `{"id":"r","type":"reply"}`, field: "text"},
		{name: "blank text", payload: `{"id":"r","type":"reply","text":"  "}`, field: "text"},
		{name: "text not string", payload: `{"id":"r","type":"reply","text":5}`, field: "text"},
		{name: "text too long", payload: `{"id":"r","type":"reply","text":"` + long + `"}`, field: "text"},
		{name: "blank spoken", payload: `{"id":"r","type":"reply","text":"x","spoken":""}`, field: "spoken"},
		{name: "bad lang", payload: `{"id":"r","type":"reply","text":"x","lang":"de"}`, field: "lang"},
		{name: "null lang", payload: `{"id":"r","type":"reply","text":"x","lang":null}`, field: "lang"},
		{name: "bad urgent", payload: `{"id":"r","type":"reply","text":"x","urgent":"yes"}`, field: "urgent"},
		{name: "null urgent", payload: `{"id":"r","type":"reply","text":"x","urgent":null}`, field: "urgent"},
		{name: "bad expires_at", payload: `{"id":"r","type":"reply","text":"x","expires_at":"tomorrow"}`, field: "expires_at"},
		{name: "expires_at number", payload: `{"id":"r","type":"reply","text":"x","expires_at":17}`, field: "expires_at"},
		{name: "bad in_reply_to", payload: `{"id":"r","type":"reply","text":"x","in_reply_to":"a b"}`, field: "in_reply_to"},
		{name: "unknown field", payload: `{"id":"r","type":"reply","text":"x","voice":"m3"}`, field: "voice"},
		{name: "duplicate text", payload: `{"id":"r","type":"reply","text":"x","text":"y"}`, field: "text"},
		{name: "invalid utf-8", payload: "{\"id\":\"r\",\"type\":\"reply\",\"text\":\"\xff\"}", field: "payload"},
		{name: "oversize", payload: `{"id":"r","type":"reply","text":"x","spoken":"` + strings.Repeat("b", MaxCommandBytes) + `"}`, field: "payload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, err := ParseCommand("dev", []byte(tc.payload))
			if tc.field != "" {
				var ce *CommandError
				if !errors.As(err, &ce) || ce.Field != tc.field {
					t.Fatalf("err = %v, want a CommandError on %q", err, tc.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cmd.Type != CmdReply || cmd.Reply == nil {
				t.Fatalf("cmd %+v", cmd)
			}
			got := *cmd.Reply
			if !got.ExpiresAt.Equal(tc.want.ExpiresAt) {
				t.Errorf("expires_at %v, want %v", got.ExpiresAt, tc.want.ExpiresAt)
			}
			got.ExpiresAt, tc.want.ExpiresAt = time.Time{}, time.Time{}
			if got != tc.want {
				t.Errorf("reply %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestReplySpokenText(t *testing.T) {
	if got := (Reply{Text: "a"}).SpokenText(); got != "a" {
		t.Errorf("SpokenText without spoken = %q", got)
	}
	if got := (Reply{Text: "a", Spoken: "b"}).SpokenText(); got != "b" {
		t.Errorf("SpokenText = %q", got)
	}
}
