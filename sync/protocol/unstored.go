package protocol

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agora/agorad/buffer"
)

// RenderUnstored builds the utterance message of a record the device could
// not store (its storage failed): the envelope has seq 0, no store_id and
// unstored true; id is the message's own (callers use a fresh UUIDv7). A
// reader de-duplicates it by id alone: it is outside the device's sequence.
func RenderUnstored(deviceID, id string, r buffer.Record, at time.Time) (topic string, payload []byte, err error) {
	if err := ValidateDeviceID(deviceID); err != nil {
		return "", nil, fmt.Errorf("render unstored utterance: %w", err)
	}
	if id == "" {
		return "", nil, fmt.Errorf("render unstored utterance: empty id")
	}
	u := Utterance{
		Envelope: Envelope{V: Version, Type: TypeUtterance, ID: id, DeviceID: deviceID, CreatedAt: FormatTime(at),
			Offline: r.Offline, Unstored: true},
		Text: r.Text, Lang: r.Lang, Confidence: r.Confidence, StartedAt: FormatTime(r.StartedAt),
		DurationMS: r.DurationMS, Source: r.Source,
	}
	if payload, err = json.Marshal(u); err != nil {
		return "", nil, fmt.Errorf("render unstored utterance %s: %w", id, err)
	}
	return Topic(deviceID, TopicUtterances), payload, nil
}
