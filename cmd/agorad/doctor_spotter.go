package main

import (
	"fmt"

	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/transcribe/model"
	"github.com/agora/agorad/wake/kws"
)

// checkSpotter: the keyword spotter hears the name whisper mishears; a
// device without its front end wakes only on what whisper writes. Opening
// it runs the TensorFlow Lite library and both feature models once.
func checkSpotter(cfg *configs.Config) check {
	mode := cfg.Wake.SpotterMode()
	if mode == "off" {
		return check{"spotter", "ok", "off (wake.spotter): the name is found in whisper's text alone", ""}
	}
	s, err := kws.OpenDefault(cfg.Wake.SpotterThreshold, model.Dirs(cfg.ModelsDir())...)
	if err != nil {
		status := "warn"
		if mode == "on" {
			status = "fail"
		}
		return check{"spotter", status, err.Error(), "make models (or install the package's models/kws), or set wake.spotter: off"}
	}
	defer s.Close()
	return check{"spotter", "ok", fmt.Sprintf("keyword spotter ready (threshold %.2f)", s.Threshold()), ""}
}
