package model_test

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/ggml"
	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/transcribe"
	"github.com/agora/agorad/transcribe/model"
)

// TestImportedModelsDecodeJFK imports the real tiny.en from the PyPI cache
// in each weight type (and base as q4_0, which make models imports too),
// checks the file as the transcriber does, and has libwhisper transcribe
// jfk with it: word for word, the text whisper.cpp gives with OpenAI's own
// tiny.en.
func TestImportedModelsDecodeJFK(t *testing.T) {
	if testing.Short() {
		t.Skip("imports a real model and runs whisper.cpp")
	}
	samples, err := audio.ReadFile(testaudio.Clip(t, "fw_jfk.wav"))
	if err != nil {
		t.Fatal(err)
	}
	const want = "and so my fellow americans ask not what your country can do for you ask what you can do for your country"
	for _, c := range []struct{ name, typ string }{
		{"tiny.en", model.TypeF16}, {"tiny.en", model.TypeQ8_0}, {"tiny.en", model.TypeQ4_0}, {"base", model.TypeQ4_0},
	} {
		name, typ := c.name, c.typ
		t.Run(name+"-"+typ, func(t *testing.T) {
			src := testaudio.CT2Model(t, name)
			out := filepath.Join(t.TempDir(), "ggml-"+name+"-"+typ+".bin")
			res, err := model.Import(src, out, typ)
			if err != nil {
				t.Fatal(err)
			}
			if h, err := ggml.CheckWhisper(out); err != nil || h != res.Header {
				t.Fatalf("CheckWhisper: %+v, %v; import wrote %+v", h, err, res.Header)
			}
			t.Logf("%s %s: %.1f MB, imported in %s", name, typ, float64(res.Bytes)/1e6, res.Duration)
			tr, err := transcribe.New(transcribe.Options{ModelPath: out, Language: "en", InitialPrompt: "-", Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			r, err := tr.Transcribe(context.Background(), samples)
			if err != nil {
				t.Fatal(err)
			}
			if got := normalise(r.Text); got != want {
				t.Errorf("jfk with the %s %s import:\n got %q\nwant %q", name, typ, got, want)
			}
		})
	}
}

var punct = regexp.MustCompile(`[^\p{L}\p{N}\s]+`)

func normalise(s string) string {
	return strings.Join(strings.Fields(punct.ReplaceAllString(strings.ToLower(strings.ReplaceAll(s, "'", "")), " ")), " ")
}
