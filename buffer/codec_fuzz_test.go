package buffer

import (
	"bytes"
	"testing"
	"time"
)

// FuzzStoreCodec feeds arbitrary bytes to every decoder of stored values
// (outbox entries, journaled audio, the identity file, the per-key check
// that decides dead letters): none may panic, and whatever decodes must
// re-encode to something that decodes the same. The seed corpus runs in
// every `go test`; `make fuzz` (part of `make test`) fuzzes for FUZZTIME.
func FuzzStoreCodec(f *testing.F) {
	e, _ := encodeEntry(Entry{ID: "01a2061c-d327-7595-b098-28e6ab60af1e", Seq: 7, Lane: LaneData, Kind: KindUtterance,
		CreatedAt: time.Unix(1700000000, 0).UTC(), Body: []byte(`{"text":"scheur"}`)})
	f.Add(e)
	f.Add(e[:len(e)/2])
	f.Add(encodeAudio([]float32{0, 0.5, -0.5, 1, -1}, time.Unix(1700000000, 0)))
	id := &identity{ID: "01a2061c-d327-7595-b098-28e6ab60af1e", Created: time.Unix(1700000000, 0), Seq: 42, Lease: 1066}
	f.Add(id.encode())
	f.Add([]byte{entryFormat, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte("AJ\x01"))
	f.Add(append(encodeAudio([]float32{0}, time.Unix(0, 0))[:journalHeaderLen-4], 1, 0, 0, 0, 0, 0x80))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, err := decodeEntry(b); err == nil {
			again, err := encodeEntry(got)
			if err != nil {
				t.Fatalf("decoded entry does not encode: %v", err)
			}
			got2, err := decodeEntry(again)
			if err != nil || got2.ID != got.ID || got2.Seq != got.Seq || got2.Kind != got.Kind || !bytes.Equal(got2.Body, got.Body) {
				t.Fatalf("entry round trip: %+v -> %+v (%v)", got, got2, err)
			}
		}
		if a, err := decodeAudio("x", b); err == nil {
			// -32768 comes back as -32767 (the encoder is symmetric).
			a2, err := decodeAudio("x", encodeAudio(a.Samples, a.StartedAt))
			if err != nil || len(a2.Samples) != len(a.Samples) {
				t.Fatalf("audio round trip: %v", err)
			}
			for i := range a.Samples {
				if d := a2.Samples[i] - a.Samples[i]; d > 1.0/32767 || d < -1.0/32767 {
					t.Fatalf("audio round trip changed sample %d: %v -> %v", i, a.Samples[i], a2.Samples[i])
				}
			}
		}
		if id, err := decodeIdentity(b); err == nil {
			id2, err := decodeIdentity(id.encode())
			if err != nil || id2.ID != id.ID || id2.Seq != id.Seq || id2.Lease != id.Lease {
				t.Fatalf("identity round trip: %+v -> %+v (%v)", id, id2, err)
			}
		}
		for _, k := range [][]byte{outboxKey(LaneData, 3), journalKey("x"), listenKey(3)} {
			if err := checkValue(k, b, int64(len(b))); err == nil && bytes.HasPrefix(k, prefixOutbox) {
				if _, err := decodeEntry(b); err != nil {
					t.Fatalf("checkValue passed an entry decodeEntry refuses: %v", err)
				}
			}
		}
		if len(b) >= 12 {
			unreadableEntry(outboxKey(Lane(b[0]%2), uint64(b[1])), b, errFuzz)
		}
	})
}

var errFuzz = bytesError("fuzz")

type bytesError string

func (e bytesError) Error() string { return string(e) }
