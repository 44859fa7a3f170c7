package main

import (
	"fmt"

	"github.com/agora/agorad/audio/ggml"
)

// computeInfo is what ggml loaded for this CPU: the modules' directory and
// the chosen variant's instruction-set features.
type computeInfo struct {
	dir, features string
}

func realCompute() (computeInfo, error) {
	if err := ggml.LoadBackends(); err != nil {
		return computeInfo{}, err
	}
	return computeInfo{ggml.BackendDir(), ggml.CPUFeatures()}, nil
}

// checkCompute: the CPU backend loads, and which variant this CPU got (a
// fleet with mixed boards sees who runs the baseline).
func checkCompute(load func() (computeInfo, error)) check {
	ci, err := load()
	if err != nil {
		return check{"compute", "fail", err.Error(),
			"reinstall agorad: its private libraries (/usr/lib/agorad, or build/whisper/<arch>/lib) must hold libggml-cpu-*.so"}
	}
	feats := ci.features
	if feats == "" {
		feats = "baseline (no SIMD features reported)"
	}
	return check{"compute", "ok", fmt.Sprintf("ggml CPU backend from %s: %s", ci.dir, feats), ""}
}
