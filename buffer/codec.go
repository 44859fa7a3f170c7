package buffer

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// Outbox values: format byte, uvarint header length, JSON header, raw body.
// The body is stored as is (not base64 inside JSON): batches are large.
const entryFormat = 1

type entryHeader struct {
	ID        string    `json:"id"`
	Seq       uint64    `json:"seq"`
	Lane      Lane      `json:"lane"`
	Kind      Kind      `json:"kind"`
	CreatedAt time.Time `json:"created_at"`
	Offline   bool      `json:"offline"`
}

func encodeEntry(e Entry) ([]byte, error) {
	hdr, err := json.Marshal(entryHeader{ID: e.ID, Seq: e.Seq, Lane: e.Lane, Kind: e.Kind, CreatedAt: e.CreatedAt, Offline: e.Offline})
	if err != nil {
		return nil, fmt.Errorf("encode entry header: %w", err)
	}
	out := make([]byte, 0, 1+binary.MaxVarintLen64+len(hdr)+len(e.Body))
	out = append(out, entryFormat)
	out = binary.AppendUvarint(out, uint64(len(hdr)))
	out = append(out, hdr...)
	return append(out, e.Body...), nil
}

func decodeEntry(v []byte) (Entry, error) {
	if len(v) < 2 || v[0] != entryFormat {
		return Entry{}, errors.New("decode entry: unknown format")
	}
	n, w := binary.Uvarint(v[1:])
	if w <= 0 || uint64(len(v)-1-w) < n {
		return Entry{}, errors.New("decode entry: bad header length")
	}
	var h entryHeader
	if err := json.Unmarshal(v[1+w:1+w+int(n)], &h); err != nil {
		return Entry{}, fmt.Errorf("decode entry header: %w", err)
	}
	body := append([]byte(nil), v[1+w+int(n):]...)
	return Entry{ID: h.ID, Seq: h.Seq, Lane: h.Lane, Kind: h.Kind, CreatedAt: h.CreatedAt, Offline: h.Offline, Body: body}, nil
}

// Journal values: magic "AJ", format 1 (16-bit PCM), sample rate, start
// time, sample count, then little-endian int16 samples. 16 bits is what the
// microphone delivers; it halves the size of float32.
const (
	journalFormatS16 = 1
	journalHeaderLen = 2 + 1 + 4 + 8 + 4
	journalRate      = 16000
)

func encodeAudio(samples []float32, startedAt time.Time) []byte {
	out := make([]byte, journalHeaderLen+2*len(samples))
	out[0], out[1], out[2] = 'A', 'J', journalFormatS16
	binary.LittleEndian.PutUint32(out[3:], journalRate)
	binary.LittleEndian.PutUint64(out[7:], uint64(startedAt.UnixNano()))
	binary.LittleEndian.PutUint32(out[15:], uint32(len(samples)))
	p := out[journalHeaderLen:]
	for i, f := range samples {
		var v int16
		switch {
		case math.IsNaN(float64(f)):
		case f >= 1:
			v = math.MaxInt16
		case f <= -1:
			v = -math.MaxInt16
		default:
			v = int16(math.Round(float64(f) * math.MaxInt16))
		}
		binary.LittleEndian.PutUint16(p[2*i:], uint16(v))
	}
	return out
}

func decodeAudio(id string, v []byte) (JournaledAudio, error) {
	if len(v) < journalHeaderLen || v[0] != 'A' || v[1] != 'J' || v[2] != journalFormatS16 {
		return JournaledAudio{}, fmt.Errorf("decode journaled audio %s: unknown format", id)
	}
	n := int(binary.LittleEndian.Uint32(v[15:]))
	if len(v)-journalHeaderLen != 2*n {
		return JournaledAudio{}, fmt.Errorf("decode journaled audio %s: %d sample bytes for %d samples", id, len(v)-journalHeaderLen, n)
	}
	a := JournaledAudio{
		ID:        id,
		StartedAt: time.Unix(0, int64(binary.LittleEndian.Uint64(v[7:]))),
		Samples:   make([]float32, n),
	}
	p := v[journalHeaderLen:]
	for i := range a.Samples {
		a.Samples[i] = float32(int16(binary.LittleEndian.Uint16(p[2*i:]))) / math.MaxInt16
	}
	return a, nil
}

// prepareRecord fills ID, Seq and CreatedAt and encodes the record. Called
// with s.mu held, so s.seq+1 is the sequence the write will use.
func (s *Store) prepareRecord(rec *Record) ([]byte, error) {
	if rec.ID == "" {
		id, err := newID()
		if err != nil {
			return nil, err
		}
		rec.ID = id
	}
	rec.Seq = s.seq + 1
	rec.CreatedAt = time.Now().UTC()
	if s.opts.AudioRetention == RetainDrop {
		// The audio goes away with this write; don't point at it. (Callers
		// keep the journal ID to consume it.)
		rec.AudioID = ""
	}
	v, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("encode record: %w", err)
	}
	return v, nil
}
