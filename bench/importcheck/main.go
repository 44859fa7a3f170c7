// Command importcheck decodes clips with an imported ggml model through
// libwhisper the way bench/importcheck/ct2tokens.py decodes them with
// CTranslate2 (faster-whisper): greedy, temperature 0 without fallback,
// the full 30 s window, no prompt, no previous text, no token suppression
// beyond the defaults both share. It prints, per clip, the language, text
// and text-token ids, so the two outputs can be compared token for token.
//
//	importcheck MODEL.bin < list.tsv   (lines: FILE<TAB>LANG, LANG "auto" to detect)
package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/ggml"
	whisper "github.com/ggerganov/whisper.cpp/bindings/go"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: importcheck MODEL.bin < list.tsv")
		os.Exit(2)
	}
	if err := ggml.LoadBackends(); err != nil {
		fail(err)
	}
	ctx := whisper.Whisper_init(os.Args[1])
	if ctx == nil {
		fail(fmt.Errorf("libwhisper could not load %s", os.Args[1]))
	}
	defer ctx.Whisper_free()
	eot := int(ctx.Whisper_token_eot())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		file, lang, _ := strings.Cut(sc.Text(), "\t")
		s, err := audio.ReadFile(file)
		if err != nil {
			fail(err)
		}
		p := ctx.Whisper_full_default_params(whisper.SAMPLING_GREEDY)
		p.SetThreads(2)
		p.SetNoContext(true)
		p.SetPrintProgress(false)
		p.SetPrintRealtime(false)
		p.SetTemperature(0)
		p.SetTemperatureFallback(0)
		id := -1
		if lang != "auto" && lang != "" {
			id = ctx.Whisper_lang_id(lang)
		}
		if err := p.SetLanguage(id); err != nil {
			fail(err)
		}
		if err := ctx.Whisper_full(p, s, nil, nil, nil); err != nil {
			fail(fmt.Errorf("%s: %w", file, err))
		}
		var text, ids []string
		for i := 0; i < ctx.Whisper_full_n_segments(); i++ {
			text = append(text, ctx.Whisper_full_get_segment_text(i))
			for j := 0; j < ctx.Whisper_full_n_tokens(i); j++ {
				if t := int(ctx.Whisper_full_get_token_id(i, j)); t < eot {
					ids = append(ids, fmt.Sprint(t))
				}
			}
		}
		fmt.Printf("%s\t%s\t%s\t%s\n", file, whisper.Whisper_lang_str(ctx.Whisper_full_lang_id()),
			strings.TrimSpace(strings.Join(text, "")), strings.Join(ids, " "))
	}
	if err := sc.Err(); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "importcheck:", err)
	os.Exit(1)
}
