package protocol

import (
	"fmt"
	"strconv"
	"strings"
)

// Streamed answers: the bridge sends an answer's parts while the graph is
// still writing it, so their number is not known when the first goes out.
// Their ids say what is known: "<reply id>.s<i>" is part i with more parts
// to follow, "<reply id>.s<i>e" is part i and the last. A device before
// streaming takes every such id as a whole reply and speaks them in arrival
// order (MQTT keeps a device's commands in order), so it hears the answer
// whole, without waiting for a lost part.

// StreamPartID is the command id of streamed part index of reply id; last
// marks the answer's last part.
func StreamPartID(id string, index int, last bool) string {
	if last {
		return fmt.Sprintf("%s.s%de", id, index)
	}
	return fmt.Sprintf("%s.s%d", id, index)
}

// parseStreamPart reads "<reply id>.s<i>" or "<reply id>.s<i>e" (1 <= i <=
// MaxReplyParts, no leading zeros).
func parseStreamPart(id string) (ReplyPart, bool) {
	dot := strings.LastIndex(id, ".s")
	if dot <= 0 {
		return ReplyPart{}, false
	}
	num, last := strings.CutSuffix(id[dot+2:], "e")
	if num == "" || len(num) > 4 || num[0] == '0' {
		return ReplyPart{}, false
	}
	i, err := strconv.Atoi(num)
	if err != nil || i < 1 || i > MaxReplyParts {
		return ReplyPart{}, false
	}
	return ReplyPart{Reply: id[:dot], Index: i, Stream: true, Last: last}, true
}

// PartIDs are the ids part index of p's reply may have: one for a numbered
// part, two for a streamed one (with more to follow, or the last).
func (p ReplyPart) PartIDs(index int) []string {
	if !p.Stream {
		return []string{PartID(p.Reply, index, p.Of)}
	}
	return []string{StreamPartID(p.Reply, index, false), StreamPartID(p.Reply, index, true)}
}
