package protocol

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/buffer"
)

func batchEntry(t *testing.T, n int, text func(i int) string) buffer.Entry {
	t.Helper()
	items := make([]buffer.Record, n)
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for i := range items {
		items[i] = buffer.Record{ID: fmt.Sprintf("019c0000-0000-7000-8000-%012d", i), Seq: uint64(i + 1), Text: text(i),
			Lang: "en", Confidence: 0.9, StartedAt: at, DurationMS: 1200, Source: "typed", CreatedAt: at}
	}
	body, err := json.Marshal(buffer.BatchBody{Items: items, Count: n})
	if err != nil {
		t.Fatal(err)
	}
	return buffer.Entry{ID: "019c0000-0000-7000-8000-batch0000001", Seq: uint64(n + 1), Kind: buffer.KindBatch,
		StoreID: "store-1", CreatedAt: at, Body: body}
}

// The device's parts always fit the bridge's limit, carry one logical batch
// and join back to exactly the notes flushed, in order.
func TestRenderPartsFitAndJoin(t *testing.T) {
	note := func(i int) string {
		return fmt.Sprintf("note %05d: crack in the weld at frame four, north column, level two; photo taken", i)
	}
	cases := []struct {
		name      string
		n         int
		text      func(int) string
		wantParts func(int) bool
	}{
		{"small batch stays one message", 3, note, func(p int) bool { return p == 1 }},
		{"1,000 typed notes (issue 27)", 1000, note, func(p int) bool { return p >= 2 }},
		{"10,000 notes", 10000, note, func(p int) bool { return p >= 10 }},
		{"escape-heavy notes", 3000, func(i int) string { return strings.Repeat("\"\\\x01<>&", 12) + fmt.Sprint(i) },
			func(p int) bool { return p >= 2 }},
		{"one note close to the limit", 1, func(int) string { return strings.Repeat("x", MaxMessageBytes-2048) },
			func(p int) bool { return p == 1 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := batchEntry(t, tc.n, tc.text)
			topic, payloads, err := RenderParts("dev-1", e)
			if err != nil {
				t.Fatal(err)
			}
			if topic != "agora/v1/dev-1/batches" || !tc.wantParts(len(payloads)) {
				t.Fatalf("topic %s, %d parts", topic, len(payloads))
			}
			var parts []Batch
			for i, p := range payloads {
				if len(p) > MaxMessageBytes {
					t.Errorf("part %d is %d bytes, over MaxMessageBytes %d", i+1, len(p), MaxMessageBytes)
				}
				var b Batch
				if err := json.Unmarshal(p, &b); err != nil {
					t.Fatal(err)
				}
				if b.ID != e.ID || b.Seq != e.Seq || b.StoreID != "store-1" || !b.Context.IsOfflineBatch ||
					b.Context.MessageCount != tc.n || b.Count != len(b.Items) {
					t.Errorf("part %d envelope %+v context %+v count %d/%d", i+1, b.Envelope, b.Context, b.Count, len(b.Items))
				}
				if len(payloads) == 1 && b.Part != nil || len(payloads) > 1 && (b.Part == nil || *b.Part != BatchPart{Index: i + 1, Of: len(payloads)}) {
					t.Errorf("part %d numbered %+v of %d payloads", i+1, b.Part, len(payloads))
				}
				parts = append(parts, b)
			}
			if len(parts) == 1 {
				return
			}
			// Arrival order does not matter to the join.
			parts[0], parts[len(parts)-1] = parts[len(parts)-1], parts[0]
			whole, err := JoinParts(parts)
			if err != nil {
				t.Fatal(err)
			}
			if whole.Count != tc.n || whole.Part != nil {
				t.Fatalf("joined %d notes (part %+v), want %d", whole.Count, whole.Part, tc.n)
			}
			for i, it := range whole.Items {
				if it.Seq != uint64(i+1) || it.Text != tc.text(i) {
					t.Fatalf("joined note %d: seq %d text %q", i, it.Seq, it.Text)
				}
			}
		})
	}
}

func TestRenderPartsNoteTooLarge(t *testing.T) {
	e := batchEntry(t, 2, func(int) string { return strings.Repeat("y", MaxMessageBytes) })
	if _, _, err := RenderParts("dev-1", e); err == nil || !strings.Contains(err.Error(), "alone is") {
		t.Fatalf("a note larger than a message: err %v", err)
	}
}

func TestJoinPartsRefusesMismatch(t *testing.T) {
	e := batchEntry(t, 2000, func(i int) string { return fmt.Sprintf("note %d %s", i, strings.Repeat("z", 200)) })
	_, payloads, err := RenderParts("dev-1", e)
	if err != nil || len(payloads) < 3 {
		t.Fatalf("%d parts, %v", len(payloads), err)
	}
	decode := func() []Batch {
		var out []Batch
		for _, p := range payloads {
			var b Batch
			_ = json.Unmarshal(p, &b)
			out = append(out, b)
		}
		return out
	}
	cases := []struct {
		name   string
		mangle func([]Batch) []Batch
		want   string
	}{
		{"missing part", func(b []Batch) []Batch { return b[1:] }, "missing"},
		{"other batch id", func(b []Batch) []Batch { b[1].ID = "other"; return b }, "does not match"},
		{"other seq", func(b []Batch) []Batch { b[2].Seq++; return b }, "does not match"},
		{"lost notes", func(b []Batch) []Batch { b[1].Items = b[1].Items[1:]; return b }, "messageCount"},
		{"index out of range", func(b []Batch) []Batch { b[1].Part = &BatchPart{Index: 0, Of: b[1].Part.Of}; return b }, "part.index"},
		{"none", func([]Batch) []Batch { return nil }, "none"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := JoinParts(tc.mangle(decode())); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// Every reply part the bridge would send is a command the device's own
// parser (ParseCommand) accepts, and together they say the whole answer.
func TestSplitReplyPartsAreValidCommands(t *testing.T) {
	sentence := "The weld at frame four shows a crack of about two centimetres. "
	cases := []struct {
		name      string
		text      string
		spoken    string
		wantParts func(int) bool
	}{
		{"short answer unchanged", "Noted: crack in the weld.", "", func(n int) bool { return n == 1 }},
		{"200 KB answer (issue 27)", strings.Repeat(sentence, 200<<10/len(sentence)), "", func(n int) bool { return n >= 25 }},
		{"200 KB without sentence ends", strings.Repeat("abcdefghij", 20<<10), "", func(n int) bool { return n >= 25 }},
		{"escape-heavy answer", strings.Repeat("\"\x01\\<é ", 4000), "", func(n int) bool { return n >= 2 }},
		{"long text, long spoken form", strings.Repeat(sentence, 500), strings.Repeat("Crack at frame four. ", 900),
			func(n int) bool { return n >= 4 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := ReplyCommand{ID: "reply-019c0000-0000-7000-8000-000000000001", Type: CmdReply,
				InReplyTo: "019c0000-0000-7000-8000-000000000001", Text: tc.text, Spoken: tc.spoken, Lang: "en"}
			parts := SplitReply(r)
			if !tc.wantParts(len(parts)) {
				t.Fatalf("%d parts", len(parts))
			}
			var text, spoken strings.Builder
			for i, p := range parts {
				payload, _ := json.Marshal(p)
				cmd, err := ParseCommand("dev-1", payload)
				if err != nil {
					t.Fatalf("part %d (%d bytes) refused by the device: %v", i+1, len(payload), err)
				}
				if cmd.Reply.InReplyTo != r.InReplyTo || cmd.Reply.Lang != "en" {
					t.Errorf("part %d: in_reply_to %q lang %q", i+1, cmd.Reply.InReplyTo, cmd.Reply.Lang)
				}
				if len(parts) > 1 && cmd.ID != fmt.Sprintf("%s.p%dof%d", r.ID, i+1, len(parts)) {
					t.Errorf("part %d id %q", i+1, cmd.ID)
				}
				text.WriteString(cmd.Reply.Text)
				if tc.spoken != "" && cmd.Reply.Spoken != "." {
					spoken.WriteString(cmd.Reply.Spoken)
				}
			}
			if len(parts) == 1 && parts[0] != r {
				t.Errorf("a reply that fits was changed")
			}
			if strings.Join(strings.Fields(text.String()), " ") != strings.Join(strings.Fields(tc.text), " ") {
				t.Errorf("parts do not add up to the text (%d vs %d bytes)", text.Len(), len(tc.text))
			}
			if tc.spoken != "" && strings.Join(strings.Fields(spoken.String()), " ") != strings.Join(strings.Fields(tc.spoken), " ") {
				t.Errorf("parts do not add up to the spoken form")
			}
		})
	}
}
