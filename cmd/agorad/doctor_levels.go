package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/agora/agorad/cmd/internal/control"
	"github.com/agora/agorad/configs"
)

// Microphone placement as the running daemon's wearer gate hears it
// (audio/wearer): a headset gets its wearer 15-25 dB over the noise floor
// and near wearer.expected_dbfs; less means the boom is far from the mouth
// or the gain is wrong, and the gate cannot tell the wearer from the crew.
const (
	minSpeechOverFloor = 15.0 // dB the wearer's speech should stand over the floor
	levelOffDB         = 10.0 // dB over the expected level that counts as too loud
	// quietDB under the expected level already costs the wearer words: the
	// gate measures utterances against the expected level until the wearer
	// has been heard, and with the wearer 7 dB under it bench/wearer's clean
	// WER went from 6.3 % to 27.9 % (11 dB under: 90 %, most sentences
	// dropped).
	quietDB         = 5.0
	maxClipped      = 0.01 // share of clipped frames that counts as clipping
	minHeardSeconds = 10.0 // less audio than this tells nothing yet
)

// checkLevels asks a running agorad for the noise floor and the wearer's
// speech level over the last minutes and judges the microphone's placement.
func checkLevels(ctx context.Context, cfg *configs.Config) check {
	st, err := runningStatus(ctx, cfg)
	switch {
	case errors.Is(err, control.ErrNotRunning):
		return check{"levels", "skip", "agorad is not running: no noise floor or speech level to report", "start agorad, speak a few sentences and run doctor again"}
	case errors.Is(err, errAsk):
		return check{"levels", "warn", err.Error(), ""}
	case err != nil:
		return check{"levels", "warn", err.Error(), "run doctor as a member of group agorad to see the levels the running daemon hears"}
	}
	return judgeLevels(st.Levels)
}

// judgeLevels turns the levels into one line with what to do.
func judgeLevels(l *control.Levels) check {
	const name = "levels"
	if l == nil {
		return check{name, "skip", "agorad runs without hands-free capture: no levels", ""}
	}
	if l.Seconds < minHeardSeconds {
		return check{name, "skip", fmt.Sprintf("only %.0f s of audio heard so far", l.Seconds), "let agorad listen for a minute (speak a few sentences) and run doctor again"}
	}
	floor := fmt.Sprintf("noise floor %.1f dBFS over the last %.0f s", l.FloorDBFS, l.Seconds)
	if l.Clipped > maxClipped {
		return check{name, "warn", fmt.Sprintf("%s; the microphone clips in %.1f %% of the audio", floor, 100*l.Clipped),
			"lower the capture gain (alsamixer) or move the microphone a little further from the mouth: clipped speech transcribes badly"}
	}
	if l.WearerDBFS == nil {
		detail := floor + "; no speech of the wearer heard"
		if l.DroppedDBFS != nil {
			detail += fmt.Sprintf("; %d utterances dropped as quieter than the wearer (median %.1f dBFS, expected about %.1f)", l.Dropped, *l.DroppedDBFS, l.ExpectedDBFS)
			if *l.DroppedDBFS < l.ExpectedDBFS-quietDB {
				return check{name, "warn", detail,
					"if that was the wearer: the microphone is too far from the mouth or its gain too low; place the boom 2-3 cm from the corner of the mouth, or set wearer.expected_dbfs to the level heard"}
			}
		}
		return check{name, "ok", detail, "speak a few sentences and run doctor again to see the wearer's level"}
	}
	heard := *l.WearerDBFS
	detail := fmt.Sprintf("%s; the wearer's speech %.1f dBFS (%.1f dB over the floor, %d utterances; expected about %.1f)",
		floor, heard, heard-l.FloorDBFS, l.Utterances, l.ExpectedDBFS)
	switch {
	case heard-l.FloorDBFS < minSpeechOverFloor:
		return check{name, "warn", detail + ": the speech is too close to the noise floor",
			"bring the microphone to 2-3 cm from the corner of the mouth (a close-talking, noise-cancelling headset helps): the gate cannot tell the wearer from the people around"}
	case heard < l.ExpectedDBFS-quietDB:
		return check{name, "warn", detail + ": below a headset's level (the gate drops the wearer's quieter sentences)",
			"place the boom 2-3 cm from the corner of the mouth or raise the capture gain; if this is right for the device, set wearer.expected_dbfs to the level heard"}
	case heard > l.ExpectedDBFS+levelOffDB:
		return check{name, "warn", detail + ": far above the expected level",
			"lower the capture gain, or set wearer.expected_dbfs to the level heard"}
	}
	return check{name, "ok", detail, ""}
}
