package main

import (
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/agora/agorad/sync/protocol"
)

// replyLine is one of agorad's reply log lines (JSON).
type replyLine struct {
	Time time.Time `json:"time"`
	Msg  string    `json:"msg"`
	ID   string    `json:"id"`
}

// answer is when one utterance's answer was heard: its last sample, and
// the gaps between its parts (one part's end to the next one's first
// sample).
type answer struct {
	last time.Time
	gaps []time.Duration
}

// utteranceOf is the utterance a reply (or reply part) id answers: the
// bridge names replies "reply-<utterance id>".
func utteranceOf(id string) (utt string, index int, last bool) {
	whole, index, last := id, 1, true
	if p, ok := protocol.ParseReplyPart(id); ok {
		whole, index = p.Reply, p.Index
		last = p.Last || (!p.Stream && p.Index == p.Of)
	}
	return strings.TrimPrefix(whole, "reply-"), index, last
}

// answersSpoken counts the answers whose last part agorad spoke.
func answersSpoken(log string) int {
	n := 0
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, `"msg":"reply spoken"`) {
			continue
		}
		var x replyLine
		if json.Unmarshal([]byte(l), &x) != nil {
			continue
		}
		if _, _, last := utteranceOf(x.ID); last {
			n++
		}
	}
	return n
}

// answerTimes reads agorad's "reply audio started" and "reply spoken"
// lines, by the utterance answered.
func answerTimes(log string) map[string]answer {
	type part struct{ start, end time.Time }
	parts := map[string]map[int]*part{}
	for _, l := range strings.Split(log, "\n") {
		var x replyLine
		if !strings.Contains(l, `"msg":"reply `) || json.Unmarshal([]byte(l), &x) != nil {
			continue
		}
		utt, index, _ := utteranceOf(x.ID)
		if parts[utt] == nil {
			parts[utt] = map[int]*part{}
		}
		p := parts[utt][index]
		if p == nil {
			p = &part{}
			parts[utt][index] = p
		}
		switch x.Msg {
		case "reply audio started":
			p.start = x.Time
		case "reply spoken":
			p.end = x.Time
		}
	}
	out := map[string]answer{}
	for utt, ps := range parts {
		idx := make([]int, 0, len(ps))
		for i := range ps {
			idx = append(idx, i)
		}
		sort.Ints(idx)
		var a answer
		for k, i := range idx {
			if ps[i].end.After(a.last) {
				a.last = ps[i].end
			}
			if k > 0 && !ps[idx[k-1]].end.IsZero() && !ps[i].start.IsZero() {
				a.gaps = append(a.gaps, ps[i].start.Sub(ps[idx[k-1]].end))
			}
		}
		out[utt] = a
	}
	return out
}
