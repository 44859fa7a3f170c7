package segment

import (
	"reflect"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
)

type uttKey struct{ pad, start, end int64 }

func keyOf(u Utterance) uttKey { return uttKey{u.PadStart, u.SpeechStart, u.SpeechEnd} }

// A preview taken during the silence is exactly the utterance Push returns
// when the silence lasts; a pause that speech ends (shorter than the
// hangover) leaves a preview that matches nothing, and the whole utterance
// comes later.
func TestTentativeMatchesEmitted(t *testing.T) {
	cfg := hangover600() // 19 windows of silence end a turn; post-pad 8 windows
	tests := []struct {
		name           string
		stream         []float32
		after          time.Duration
		emitted, match int // utterances, previews matching one
		dropped        int // previews speech resumed after
	}{
		{"one turn", script(quiet(20), speech(30), quiet(40)), 300 * time.Millisecond, 1, 1, 0},
		{"pause inside a turn", script(quiet(20), speech(30), quiet(14), speech(20), quiet(40)), 300 * time.Millisecond, 1, 1, 1},
		{"pause shorter than the preview", script(quiet(20), speech(30), quiet(6), speech(20), quiet(40)), 300 * time.Millisecond, 1, 1, 0},
		{"two turns", script(quiet(20), speech(30), quiet(40), speech(25), quiet(40)), 300 * time.Millisecond, 2, 2, 0},
		{"preview never before the post-pad", script(quiet(20), speech(30), quiet(40)), 0, 1, 1, 0},
		{"too short to emit", script(quiet(20), speech(3), quiet(40)), 300 * time.Millisecond, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(&fakeVAD{}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			previews := map[uttKey]Utterance{}
			var order []uttKey
			var out []Utterance
			for i := 0; i < len(tc.stream); i += W {
				off := int64(i)
				u, err := s.Push(audio.Chunk{Samples: tc.stream[i : i+W], Offset: off, Time: t0.Add(samplesDur(off))})
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, u...)
				p, ok := s.Tentative(tc.after)
				pad, start, end, kok := s.TentativeKey(tc.after)
				if kok != ok || ok && (uttKey{pad, start, end}) != keyOf(p) {
					t.Fatalf("TentativeKey %v %v, Tentative %v %v", uttKey{pad, start, end}, kok, keyOf(p), ok)
				}
				if ok {
					if p.SpeechEnd+s.postPad > off+W {
						t.Fatalf("preview at %d ends at %d, beyond the audio pushed", off+W, p.SpeechEnd+s.postPad)
					}
					if _, seen := previews[keyOf(p)]; !seen {
						previews[keyOf(p)] = p
						order = append(order, keyOf(p))
					}
				}
			}
			if len(out) != tc.emitted {
				t.Fatalf("%d utterances, want %d", len(out), tc.emitted)
			}
			matched := 0
			for _, u := range out {
				p, ok := previews[keyOf(u)]
				if !ok {
					continue
				}
				matched++
				if !reflect.DeepEqual(p, u) {
					t.Errorf("preview %+v differs from the utterance %+v", keyOf(p), keyOf(u))
				}
			}
			if matched != tc.match || len(order)-matched != tc.dropped {
				t.Errorf("%d previews, %d matching, want %d matching and %d dropped", len(order), matched, tc.match, tc.dropped)
			}
			if st := s.Stats(); st.Utterances != int64(len(out)) {
				t.Errorf("stats count %d utterances, %d emitted: previews must not count", st.Utterances, len(out))
			}
		})
	}
}

// EndNow ends the previewed utterance early, exactly as previewed; a stale
// key (the speaker went on) changes nothing; the next utterance follows as
// after any other.
func TestEndNow(t *testing.T) {
	s, err := New(&fakeVAD{}, hangover600())
	if err != nil {
		t.Fatal(err)
	}
	stream := script(quiet(20), speech(30), quiet(14), speech(20), quiet(40))
	after := 300 * time.Millisecond
	var out []Utterance
	var ended []Utterance
	var stale uttKey
	for i := 0; i < len(stream); i += W {
		off := int64(i)
		u, err := s.Push(audio.Chunk{Samples: stream[i : i+W], Offset: off, Time: t0.Add(samplesDur(off))})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, u...)
		if _, _, _, ok := s.TentativeKey(after); ok && len(ended) == 0 {
			p, _ := s.Tentative(after)
			if _, ok := s.EndNow(p.PadStart+1, p.SpeechStart, p.SpeechEnd, after); ok {
				t.Fatal("EndNow ended an utterance under a key that is not the preview's")
			}
			e, ok := s.EndNow(p.PadStart, p.SpeechStart, p.SpeechEnd, after)
			if !ok || !reflect.DeepEqual(e, p) {
				t.Fatalf("EndNow = %+v %v, want the preview %+v", keyOf(e), ok, keyOf(p))
			}
			stale = keyOf(p)
			ended = append(ended, e)
			if _, ok := s.EndNow(stale.pad, stale.start, stale.end, after); ok {
				t.Fatal("EndNow returned the same utterance twice")
			}
		}
	}
	if len(ended) != 1 || len(out) != 1 {
		t.Fatalf("ended early %d, emitted %d: want the first ended early and the second emitted", len(ended), len(out))
	}
	if out[0].SpeechStart <= ended[0].SpeechEnd {
		t.Errorf("second utterance starts at %d, inside the first (ends %d)", out[0].SpeechStart, ended[0].SpeechEnd)
	}
	if st := s.Stats(); st.Utterances != 2 {
		t.Errorf("stats count %d utterances, want 2", st.Utterances)
	}
}
