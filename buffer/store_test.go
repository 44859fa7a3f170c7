package buffer

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// openT opens a store in dir (a fresh temp dir when empty) and closes it at
// the end of the test.
func openT(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = quiet()
	}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func reopen(t testing.TB, s *Store) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return openT(t, s.dir, s.opts)
}

func rec(text string) Record {
	return Record{Text: text, Lang: "nl", StartedAt: time.Now().Add(-time.Second), DurationMS: 800, Source: "mic"}
}

type batchBody struct {
	Items []Record `json:"items"`
	Count int      `json:"count"`
}

func decodeBatch(t testing.TB, e Entry) batchBody {
	t.Helper()
	var b batchBody
	if err := json.Unmarshal(e.Body, &b); err != nil {
		t.Fatalf("batch body %.80q: %v", e.Body, err)
	}
	if b.Count != len(b.Items) {
		t.Fatalf("batch count %d but %d items", b.Count, len(b.Items))
	}
	return b
}

// rawListenKeys counts physical listen keys, including moved ones the floor hides.
func rawListenKeys(t testing.TB, s *Store) int {
	t.Helper()
	n := 0
	err := s.view(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixListen})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestOpenOptionsValidation(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"bad sync", Options{Sync: "sometimes"}, "sync"},
		{"bad retention", Options{AudioRetention: "forever"}, "audio retention"},
		{"negative cap", Options{MaxItems: -1}, "caps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := Open(dir, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("Open error = %v, want one naming %q and the dir", err, tt.want)
			}
		})
	}
}

func TestSchemaVersion(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The schema key was written on create.
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	var v uint64
	err = db.View(func(txn *badger.Txn) error {
		var err error
		v, err = getUint64(txn, keySchema)
		return err
	})
	if err != nil || v != SchemaVersion {
		t.Fatalf("schema key = %d, %v; want %d", v, err, SchemaVersion)
	}
	// A newer schema is refused with a clear error.
	if err := db.Update(func(txn *badger.Txn) error { return txn.Set(keySchema, be8(SchemaVersion+1)) }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, Options{Logger: quiet()})
	if err == nil || !strings.Contains(err.Error(), "schema version 2") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Open of newer schema: %v", err)
	}
}

func TestMode(t *testing.T) {
	s := openT(t, "", Options{})
	if m, err := s.Mode(); err != nil || m != "" {
		t.Fatalf("fresh Mode = %q, %v; want empty", m, err)
	}
	tests := []struct {
		mode    string
		wantErr bool
	}{
		{ModeFeedback, false},
		{ModeListen, false},
		{"", true},
		{"sleep", true},
	}
	for _, tt := range tests {
		err := s.SetMode(tt.mode)
		if (err != nil) != tt.wantErr {
			t.Fatalf("SetMode(%q) = %v, wantErr %v", tt.mode, err, tt.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "mode") {
			t.Errorf("SetMode(%q) error %v does not say what was wrong", tt.mode, err)
		}
	}
	if err := s.SetMode(ModeFeedback); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s)
	if m, err := s.Mode(); err != nil || m != ModeFeedback {
		t.Fatalf("Mode after reopen = %q, %v", m, err)
	}
}

func TestAppendListen(t *testing.T) {
	s := openT(t, "", Options{})
	tests := []struct {
		name string
		in   Record
	}{
		{"assigns id", rec("eerste")},
		{"keeps given id", Record{ID: "0190c4a2-0000-7000-8000-000000000001", Text: "tweede"}},
		{"offline", Record{Text: "derde", Offline: true, Source: "typed"}},
		{"unicode", rec("scheur in de lasnaad — 3 mm, ∅ 12")},
	}
	var got []Record
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := time.Now()
			r, err := s.AppendListen(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if tt.in.ID != "" && r.ID != tt.in.ID {
				t.Errorf("ID = %q, want the given %q", r.ID, tt.in.ID)
			}
			if r.ID == "" || r.Seq == 0 || r.CreatedAt.Before(before.Add(-time.Millisecond)) {
				t.Errorf("not assigned: %+v", r)
			}
			if len(got) > 0 && r.Seq <= got[len(got)-1].Seq {
				t.Errorf("seq %d not after %d", r.Seq, got[len(got)-1].Seq)
			}
			if r.Text != tt.in.Text || r.Offline != tt.in.Offline {
				t.Errorf("fields changed: %+v", r)
			}
			got = append(got, r)
		})
	}
	check := func(s *Store) {
		t.Helper()
		if n, err := s.ListenCount(); err != nil || n != len(got) {
			t.Fatalf("ListenCount = %d, %v; want %d", n, err, len(got))
		}
		list, err := s.ListListen(0)
		if err != nil || len(list) != len(got) {
			t.Fatalf("ListListen = %d, %v", len(list), err)
		}
		for i := range list {
			if list[i].ID != got[i].ID || list[i].Seq != got[i].Seq || list[i].Text != got[i].Text || !list[i].CreatedAt.Equal(got[i].CreatedAt) {
				t.Errorf("item %d = %+v, want %+v", i, list[i], got[i])
			}
		}
		if two, _ := s.ListListen(2); len(two) != 2 || two[1].Seq != got[1].Seq {
			t.Errorf("ListListen(2) = %+v", two)
		}
	}
	check(s)
	s = reopen(t, s)
	check(s)
	r, err := s.AppendListen(rec("na herstart"))
	if err != nil || r.Seq <= got[len(got)-1].Seq {
		t.Fatalf("append after reopen: seq %d, %v; last was %d", r.Seq, err, got[len(got)-1].Seq)
	}
	n, err := s.ClearListen()
	if err != nil || n != len(got)+1 {
		t.Fatalf("ClearListen = %d, %v", n, err)
	}
	if c, _ := s.ListenCount(); c != 0 {
		t.Fatalf("ListenCount after clear = %d", c)
	}
	if raw := rawListenKeys(t, s); raw != 0 {
		t.Fatalf("%d listen keys left after clear", raw)
	}
	s = reopen(t, s)
	if l, _ := s.ListListen(0); len(l) != 0 {
		t.Fatalf("cleared records back after reopen: %d", len(l))
	}
}

func TestOutboxOrderAndDelete(t *testing.T) {
	s := openT(t, "", Options{})
	type step struct {
		lane Lane
		kind Kind
	}
	steps := []step{{LaneData, KindEvent}, {LaneControl, KindAck}, {LaneData, KindEvent}, {LaneControl, KindAck}, {LaneData, KindEvent}}
	var ents []Entry
	for i, st := range steps {
		e, err := s.Enqueue(st.lane, st.kind, i%2 == 0, []byte(`{"n":`+string(rune('0'+i))+`}`))
		if err != nil {
			t.Fatal(err)
		}
		ents = append(ents, e)
	}
	u, err := s.EnqueueUtterance(rec("controleer de klep"))
	if err != nil {
		t.Fatal(err)
	}
	var ur Record
	if err := json.Unmarshal(u.Body, &ur); err != nil || ur.Seq != u.Seq || ur.ID != u.ID || ur.Text != "controleer de klep" {
		t.Fatalf("utterance body %s (%v) does not carry the record with the entry's id/seq", u.Body, err)
	}
	ents = append(ents, u)
	wantOrder := []uint64{ents[1].Seq, ents[3].Seq, ents[0].Seq, ents[2].Seq, ents[4].Seq, u.Seq}
	check := func(s *Store, want []uint64) {
		t.Helper()
		p, err := s.Pending(0)
		if err != nil {
			t.Fatal(err)
		}
		var seqs []uint64
		for _, e := range p {
			seqs = append(seqs, e.Seq)
		}
		if !equalU64(seqs, want) {
			t.Fatalf("Pending order %v, want %v", seqs, want)
		}
		if n, _ := s.OutboxCount(); n != len(want) {
			t.Fatalf("OutboxCount = %d, want %d", n, len(want))
		}
	}
	check(s, wantOrder)
	p, _ := s.Pending(3)
	if len(p) != 3 || p[2].Seq != ents[0].Seq || p[0].Lane != LaneControl || p[2].Lane != LaneData {
		t.Fatalf("Pending(3) = %+v", p)
	}
	if string(p[2].Body) != `{"n":0}` || !p[2].Offline || p[2].Kind != KindEvent {
		t.Fatalf("entry round trip: %+v body %s", p[2], p[2].Body)
	}
	s = reopen(t, s)
	check(s, wantOrder)
	// Delete is idempotent and ignores unknown ids.
	if err := s.Delete(ents[1].ID, ents[0].ID, "no-such-id"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ents[1].ID); err != nil {
		t.Fatal(err)
	}
	check(s, []uint64{ents[3].Seq, ents[2].Seq, ents[4].Seq, u.Seq})
	s = reopen(t, s)
	check(s, []uint64{ents[3].Seq, ents[2].Seq, ents[4].Seq, u.Seq})
}

func equalU64(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestEnqueueValidation(t *testing.T) {
	s := openT(t, "", Options{})
	tests := []struct {
		name string
		lane Lane
		kind Kind
		body string
		want string
	}{
		{"bad lane", 7, KindAck, `{}`, "lane 7"},
		{"empty kind", LaneData, "", `{}`, "kind"},
		{"bad json", LaneControl, KindAck, `{"a":`, "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Enqueue(tt.lane, tt.kind, false, []byte(tt.body))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Enqueue error %v, want %q", err, tt.want)
			}
		})
	}
	if n, _ := s.OutboxCount(); n != 0 {
		t.Fatalf("refused entries were stored: %d", n)
	}
	// Nothing refused consumed a sequence number that reached storage.
	e, err := s.Enqueue(LaneData, KindEvent, false, []byte(`{}`))
	if err != nil || e.Seq == 0 {
		t.Fatal(e, err)
	}
}

func TestNotifyCoalesces(t *testing.T) {
	s := openT(t, "", Options{Sync: SyncNone})
	for range 3 {
		if _, err := s.Enqueue(LaneControl, KindAck, false, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-s.Notify():
	default:
		t.Fatal("no notification after enqueue")
	}
	select {
	case <-s.Notify():
		t.Fatal("notifications not coalesced")
	default:
	}
	if _, _, err := s.FlushListen(false); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Notify():
		t.Fatal("notified for an empty flush")
	default:
	}
	if _, err := s.AppendListen(rec("x")); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.FlushListen(false); !ok || err != nil {
		t.Fatal(ok, err)
	}
	select {
	case <-s.Notify():
	default:
		t.Fatal("no notification after flush")
	}
}

func TestFlushListen(t *testing.T) {
	s := openT(t, "", Options{})
	if _, ok, err := s.FlushListen(false); ok || err != nil {
		t.Fatalf("flush of empty buffer = %v, %v", ok, err)
	}
	var want []Record
	for _, txt := range []string{"een", "twee", "drie"} {
		r, err := s.AppendListen(rec(txt))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, r)
	}
	e, ok, err := s.FlushListen(true)
	if err != nil || !ok {
		t.Fatalf("FlushListen = %v, %v", ok, err)
	}
	if e.Kind != KindBatch || e.Lane != LaneData || !e.Offline || e.Seq <= want[2].Seq {
		t.Fatalf("batch entry %+v", e)
	}
	// Spoken after the wake phrase: must come after the batch.
	cmd, err := s.EnqueueUtterance(rec("agora wat is de norm"))
	if err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s)
	p, err := s.Pending(0)
	if err != nil || len(p) != 2 || p[0].ID != e.ID || p[1].ID != cmd.ID {
		t.Fatalf("Pending = %+v, %v; want batch then command", p, err)
	}
	b := decodeBatch(t, p[0])
	if b.Count != 3 {
		t.Fatalf("batch count %d", b.Count)
	}
	for i := range want {
		if b.Items[i].ID != want[i].ID || b.Items[i].Seq != want[i].Seq || b.Items[i].Text != want[i].Text {
			t.Errorf("item %d = %+v, want %+v", i, b.Items[i], want[i])
		}
	}
	if n, _ := s.ListenCount(); n != 0 {
		t.Fatalf("listen buffer not empty after flush: %d", n)
	}
	if raw := rawListenKeys(t, s); raw != 0 {
		t.Fatalf("%d moved listen keys left", raw)
	}
}

// TestFlushListenCrash stops FlushListen between the committed batch and the
// deletion of the moved keys, as a crash there would, and checks that the
// move is seen as complete before and after reopening, with 20,000 records
// (far beyond one Badger transaction).
func TestFlushListenCrash(t *testing.T) {
	tests := []struct {
		name  string
		n     int
		crash bool
	}{
		{"small crash", 5, true},
		{"20000 records", 20000, false},
		{"20000 records crash", 20000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.n > 1000 && testing.Short() {
				t.Skip("slow: 20,000 records")
			}
			s := openT(t, "", Options{Sync: SyncNone})
			var last Record
			for i := range tt.n {
				r, err := s.AppendListen(rec("meting " + strings.Repeat("x", i%40)))
				if err != nil {
					t.Fatal(err)
				}
				last = r
			}
			if tt.crash {
				s.testHookAfterFlushMarker = func() error { return errors.New("simulated crash") }
			}
			e, ok, err := s.FlushListen(false)
			if !ok || (err != nil) != tt.crash {
				t.Fatalf("FlushListen = %v, %v", ok, err)
			}
			if n, _ := s.ListenCount(); n != 0 {
				t.Fatalf("ListenCount after flush = %d", n)
			}
			if l, _ := s.ListListen(0); len(l) != 0 {
				t.Fatalf("ListListen shows %d moved records", len(l))
			}
			if tt.crash && rawListenKeys(t, s) != tt.n {
				t.Fatalf("the simulated crash should leave the %d keys", tt.n)
			}
			s.testHookAfterFlushMarker = nil
			s = reopen(t, s)
			if raw := rawListenKeys(t, s); raw != 0 {
				t.Fatalf("Open did not finish the move: %d listen keys", raw)
			}
			p, err := s.Pending(0)
			if err != nil || len(p) != 1 || p[0].ID != e.ID {
				t.Fatalf("Pending = %d entries, %v", len(p), err)
			}
			b := decodeBatch(t, p[0])
			if b.Count != tt.n || b.Items[tt.n-1].ID != last.ID {
				t.Fatalf("batch has %d items, want %d ending with %s", b.Count, tt.n, last.ID)
			}
			for i := 1; i < len(b.Items); i++ {
				if b.Items[i].Seq <= b.Items[i-1].Seq {
					t.Fatalf("batch items out of order at %d", i)
				}
			}
			r, err := s.AppendListen(rec("daarna"))
			if err != nil || r.Seq <= e.Seq {
				t.Fatalf("append after flush: seq %d (batch %d), %v", r.Seq, e.Seq, err)
			}
			if l, _ := s.ListListen(0); len(l) != 1 || l[0].ID != r.ID {
				t.Fatalf("listen buffer after flush+append = %+v", l)
			}
		})
	}
}

func TestJournal(t *testing.T) {
	samples := make([]float32, 16000)
	for i := range samples {
		samples[i] = float32(0.5 * math.Sin(float64(i)*2*math.Pi*440/16000))
	}
	samples[0], samples[1] = 1.5, -2 // clipped, not wrapped
	start := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		retention    string
		wantRetained int
	}{
		{RetainDrop, 0},
		{RetainKeep, 1},
	}
	for _, tt := range tests {
		t.Run(tt.retention, func(t *testing.T) {
			s := openT(t, "", Options{AudioRetention: tt.retention})
			if _, err := s.JournalAudio(nil, start); err == nil {
				t.Fatal("empty audio accepted")
			}
			id1, err := s.JournalAudio(samples, start)
			if err != nil {
				t.Fatal(err)
			}
			id2, err := s.JournalAudio(samples[:800], start.Add(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			// Crash before transcription: both come back, oldest first.
			s = reopen(t, s)
			p, err := s.PendingAudio()
			if err != nil || len(p) != 2 || p[0].ID != id1 || p[1].ID != id2 {
				t.Fatalf("PendingAudio = %d, %v", len(p), err)
			}
			if !p[0].StartedAt.Equal(start) || len(p[0].Samples) != len(samples) {
				t.Fatalf("journal round trip: start %v, %d samples", p[0].StartedAt, len(p[0].Samples))
			}
			if p[0].Samples[0] != 1 || p[0].Samples[1] != -1 {
				t.Errorf("clipping: %v %v", p[0].Samples[0], p[0].Samples[1])
			}
			for i := 2; i < len(samples); i++ {
				if d := math.Abs(float64(p[0].Samples[i] - samples[i])); d > 1.0/32767 {
					t.Fatalf("sample %d off by %g", i, d)
				}
			}
			// Text stored: its audio leaves the journal in the same write.
			r := rec("gevonden")
			r.AudioID = id1
			got, err := s.AppendListen(r)
			if err != nil {
				t.Fatal(err)
			}
			if (got.AudioID != "") != (tt.retention == RetainKeep) {
				t.Errorf("record AudioID = %q under %s", got.AudioID, tt.retention)
			}
			u := rec("commando")
			u.AudioID = id2
			if _, err := s.EnqueueUtterance(u); err != nil {
				t.Fatal(err)
			}
			s = reopen(t, s)
			if l, _ := s.ListListen(0); len(l) != 1 || l[0].AudioID != got.AudioID {
				t.Fatalf("stored record %+v, want AudioID %q", l, got.AudioID)
			}
			if p, _ := s.PendingAudio(); len(p) != 0 {
				t.Fatalf("%d clips still pending after their text was stored", len(p))
			}
			st, err := s.Stats()
			if err != nil || st.AudioRetained != 2*tt.wantRetained || st.JournalPending != 0 {
				t.Fatalf("Stats retained %d pending %d (%v)", st.AudioRetained, st.JournalPending, err)
			}
			_, err = s.Audio(id1)
			if (err == nil) != (tt.retention == RetainKeep) {
				t.Fatalf("Audio(%s) under %s: %v", id1, tt.retention, err)
			}
			// DropAudio is idempotent and removes retained audio too.
			for range 2 {
				if err := s.DropAudio(id1); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Audio(id1); err == nil {
				t.Fatal("audio still there after DropAudio")
			}
		})
	}
}

func TestCaps(t *testing.T) {
	t.Run("items", func(t *testing.T) {
		s := openT(t, "", Options{MaxItems: 5, Sync: SyncNone})
		var ok []Record
		for i := range 5 {
			r, err := s.AppendListen(rec(strings.Repeat("a", i)))
			if err != nil {
				t.Fatal(err)
			}
			ok = append(ok, r)
		}
		refusals := []struct {
			name string
			do   func() error
			kind string
		}{
			{"listen", func() error { _, err := s.AppendListen(rec("zesde")); return err }, "listen"},
			{"utterance", func() error { _, err := s.EnqueueUtterance(rec("zesde")); return err }, "utterance"},
			{"ack", func() error { _, err := s.Enqueue(LaneControl, KindAck, false, []byte(`{}`)); return err }, "ack"},
			{"audio", func() error { _, err := s.JournalAudio([]float32{0.1}, time.Now()); return err }, "audio"},
		}
		for _, r := range refusals {
			err := r.do()
			if !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), r.kind) {
				t.Fatalf("%s over the cap: %v", r.name, err)
			}
		}
		st, _ := s.Stats()
		for _, r := range refusals {
			if st.Refused[r.kind] != 1 {
				t.Errorf("Refused[%s] = %d", r.kind, st.Refused[r.kind])
			}
		}
		if !strings.Contains(st.LastError, "cap") {
			t.Errorf("LastError = %q", st.LastError)
		}
		list, _ := s.ListListen(0)
		if len(list) != 5 || list[4].ID != ok[4].ID {
			t.Fatalf("stored items touched by refusal: %d", len(list))
		}
		// Flushing turns 5 records into one entry: room again.
		if _, _, err := s.FlushListen(false); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendListen(rec("weer ruimte")); err != nil {
			t.Fatalf("append after flush freed room: %v", err)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		s := openT(t, "", Options{MaxBytes: 20 << 10, Sync: SyncNone})
		var acked []Record
		var err error
		for i := 0; i < 1000; i++ {
			var r Record
			r, err = s.AppendListen(rec(strings.Repeat("b", 200)))
			if err != nil {
				break
			}
			acked = append(acked, r)
		}
		if !errors.Is(err, ErrFull) || len(acked) == 0 {
			t.Fatalf("after %d appends: %v, want ErrFull", len(acked), err)
		}
		st, _ := s.Stats()
		if st.StoredBytes > 20<<10 {
			t.Fatalf("stored %d bytes over the 20 KiB cap", st.StoredBytes)
		}
		s = reopen(t, s)
		list, _ := s.ListListen(0)
		if len(list) != len(acked) || list[len(list)-1].ID != acked[len(acked)-1].ID {
			t.Fatalf("%d stored, %d acknowledged", len(list), len(acked))
		}
	})
	t.Run("retained audio evicted first", func(t *testing.T) {
		s := openT(t, "", Options{MaxBytes: 64 << 10, AudioRetention: RetainKeep, Sync: SyncNone})
		id, err := s.JournalAudio(make([]float32, 16000), time.Now()) // 32 KiB
		if err != nil {
			t.Fatal(err)
		}
		r := rec("met audio")
		r.AudioID = id
		if _, err := s.AppendListen(r); err != nil {
			t.Fatal(err)
		}
		var n int
		for ; n < 1000; n++ {
			if _, err = s.AppendListen(rec(strings.Repeat("c", 200))); err != nil {
				break
			}
		}
		if !errors.Is(err, ErrFull) {
			t.Fatal(err)
		}
		if _, err := s.Audio(id); err == nil {
			t.Fatal("retained audio survived while text was refused")
		}
		if n < 100 { // the 32 KiB clip made room for >100 records of ~300 B
			t.Fatalf("only %d appends after eviction", n)
		}
		if c, _ := s.ListenCount(); c != n+1 {
			t.Fatalf("ListenCount %d, want %d", c, n+1)
		}
	})
}

func TestStats(t *testing.T) {
	s := openT(t, "", Options{})
	if _, err := s.AppendListen(rec("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enqueue(LaneControl, KindAck, false, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.JournalAudio([]float32{0, 0.1}, time.Now()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Listen != 1 || st.OutboxControl != 1 || st.OutboxData != 0 || st.JournalPending != 1 || st.Seq != 2 {
		t.Fatalf("counts %+v", st)
	}
	for name, age := range map[string]time.Duration{"listen": st.OldestListen, "outbox": st.OldestOutbox, "journal": st.OldestJournal} {
		if age < 10*time.Millisecond || age > time.Minute {
			t.Errorf("oldest %s age %v", name, age)
		}
	}
	if st.StoredBytes <= 0 || st.LSMBytes <= 0 || st.VlogBytes <= 0 || st.FreeBytes <= 0 {
		t.Errorf("sizes %+v", st)
	}
	s = reopen(t, s)
	st2, _ := s.Stats()
	if st2.StoredBytes != st.StoredBytes || st2.Listen != 1 {
		t.Errorf("accounting after reopen %d bytes, want %d", st2.StoredBytes, st.StoredBytes)
	}
}

func TestConcurrentWriters(t *testing.T) {
	s := openT(t, "", Options{Sync: SyncNone})
	const workers, each = 4, 50
	var mu sync.Mutex
	seen := map[uint64]bool{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				var seq uint64
				if (w+i)%2 == 0 {
					r, err := s.AppendListen(rec("x"))
					if err != nil {
						t.Error(err)
						return
					}
					seq = r.Seq
				} else {
					e, err := s.Enqueue(LaneData, KindEvent, false, []byte(`{}`))
					if err != nil {
						t.Error(err)
						return
					}
					seq = e.Seq
				}
				mu.Lock()
				if seen[seq] {
					t.Errorf("seq %d handed out twice", seq)
				}
				seen[seq] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	l, _ := s.ListenCount()
	o, _ := s.OutboxCount()
	if l+o != workers*each || len(seen) != workers*each {
		t.Fatalf("%d listen + %d outbox, %d seqs; want %d", l, o, len(seen), workers*each)
	}
}

func TestCodecRejectsGarbage(t *testing.T) {
	tests := []struct {
		name string
		v    []byte
	}{
		{"empty", nil},
		{"bad format", []byte{9, 1, '{'}},
		{"short header", append([]byte{entryFormat}, binary.AppendUvarint(nil, 100)...)},
	}
	for _, tt := range tests {
		if _, err := decodeEntry(tt.v); err == nil {
			t.Errorf("%s: decoded", tt.name)
		}
	}
	if _, err := decodeAudio("x", []byte("AJ\x01short")); err == nil || !strings.Contains(err.Error(), "x") {
		t.Errorf("bad audio: %v", err)
	}
}
