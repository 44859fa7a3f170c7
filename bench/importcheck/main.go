// Command importcheck decodes clips with an imported ggml model through
// libwhisper the way bench/importcheck/ct2tokens.py decodes them with
// CTranslate2 (faster-whisper): greedy, temperature 0 without fallback,
// the full 30 s window, no prompt, no previous text, no token suppression
// beyond the defaults both share. It prints, per clip, the language, text
// and text-token ids, so the two outputs can be compared token for token.
//
//	importcheck MODEL.bin < list.tsv   (lines: FILE<TAB>LANG, LANG "auto" to detect)
//
// With -mel DIR it decodes instead the log-mel features ct2tokens.py --mel
// saved there, by plain argmax from <|startoftranscript|> [language
// <|transcribe|>] <|notimestamps|>: the same input and no decoding rules on
// either side, so any difference is the weights'.
//
//	importcheck -mel DIR MODEL.bin < list.tsv
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/ggml"
	whisper "github.com/ggerganov/whisper.cpp/bindings/go"
)

func main() {
	melDir := flag.String("mel", "", "decode the features saved in this directory by ct2tokens.py --mel")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: importcheck [-mel DIR] MODEL.bin < list.tsv")
		os.Exit(2)
	}
	if err := ggml.LoadBackends(); err != nil {
		fail(err)
	}
	ctx := whisper.Whisper_init(flag.Arg(0))
	if ctx == nil {
		fail(fmt.Errorf("libwhisper could not load %s", flag.Arg(0)))
	}
	defer ctx.Whisper_free()
	eot := int(ctx.Whisper_token_eot())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		file, lang, _ := strings.Cut(sc.Text(), "\t")
		if *melDir != "" {
			prompt := []whisper.Token{ctx.Whisper_token_sot()}
			if ctx.Whisper_is_multilingual() != 0 {
				prompt = append(prompt, ctx.Whisper_token_lang(ctx.Whisper_lang_id(lang)), ctx.Whisper_token_transcribe())
			}
			prompt = append(prompt, ctx.Whisper_token_not())
			ids, err := rawGreedy(ctx, melPath(*melDir, file), prompt, 200)
			if err != nil {
				fail(fmt.Errorf("%s: %w", file, err))
			}
			fmt.Printf("%s\t%s\t\t%s\n", file, lang, joinInts(ids))
			continue
		}
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

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, " ")
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "importcheck:", err)
	os.Exit(1)
}
