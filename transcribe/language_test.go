package transcribe

import (
	"strings"
	"testing"
)

// TestDecide: the likeliest of the wearer's languages, except that another
// than the one heard last needs at least switchP.
func TestDecide(t *testing.T) {
	for _, c := range []struct {
		name  string
		last  int
		probs []float64
		want  int
	}{
		{"nothing heard yet: the likeliest", -1, []float64{0.3, 0.7}, 1},
		{"same as last", 0, []float64{0.8, 0.2}, 0},
		{"ambiguous: stays", 0, []float64{0.3, 0.7}, 0},
		{"just below the switch: stays", 0, []float64{0.11, 0.89}, 0},
		{"at the switch: changes", 0, []float64{0.1, 0.9}, 1},
		{"back to the first language: its being likeliest is enough", 1, []float64{0.6, 0.4}, 0},
		{"away from the second to a third: needs the switch", 1, []float64{0.1, 0.3, 0.6}, 1},
		{"three languages", 2, []float64{0.05, 0.93, 0.02}, 1},
		{"last out of range: the likeliest", 5, []float64{0.4, 0.6}, 1},
	} {
		if got := decide(c.last, c.probs, 0.9); got != c.want {
			t.Errorf("%s: decide(%d, %v) = %d, want %d", c.name, c.last, c.probs, got, c.want)
		}
	}
}

func TestCheckLanguages(t *testing.T) {
	known := map[string]int{"en": 0, "nl": 20, "de": 2}
	lookup := func(l string) int {
		if id, ok := known[l]; ok {
			return id
		}
		return -1
	}
	for _, c := range []struct {
		langs   []string
		want    []int
		wantErr string
	}{
		{[]string{"nl", "en"}, []int{20, 0}, ""},
		{[]string{"de"}, []int{2}, ""},
		{nil, nil, "no languages"},
		{[]string{"nl", "xx"}, nil, `"xx" is not one whisper knows`},
		{[]string{"nl", "en", "nl"}, nil, `"nl" given twice`},
	} {
		got, err := checkLanguages(c.langs, lookup)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%v: err %v, want %q", c.langs, err, c.wantErr)
			}
			continue
		}
		if err != nil || len(got) != len(c.want) {
			t.Errorf("%v: %v, %v; want %v", c.langs, got, err, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%v: %v, want %v", c.langs, got, c.want)
			}
		}
	}
}
