package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agora/agorad/transcribe/model"
)

// cmdModel handles `agorad model fetch NAME [--dir DIR]`, `agorad model
// import SRC_DIR [--out FILE] [--type T]` and `agorad model list`.
func cmdModel(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	const usage = "usage: agorad model fetch NAME [--dir DIR] | agorad model import SRC_DIR [--out FILE] [--type f16|f32|q8_0|q4_0] | agorad model list"
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return exitOK
	case "fetch":
		return cmdModelFetch(ctx, args[1:], stdout, stderr, http.DefaultClient)
	case "import":
		return cmdModelImport(args[1:], stdout, stderr)
	case "list":
		if len(args) > 1 {
			if h := args[1]; h == "-h" || h == "-help" || h == "--help" {
				fmt.Fprintln(stdout, "usage: agorad model list\n\nLists the catalog's models (agorad model fetch NAME downloads one).")
				return exitOK
			}
			fmt.Fprintf(stderr, "agorad model list: unexpected argument %q\n", args[1])
			return exitUsage
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tKIND\tFILE\tSIZE")
		for _, e := range model.Catalog {
			size := "?"
			if e.Size > 0 {
				size = fmt.Sprintf("%.0f MB", float64(e.Size)/1e6)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Name, e.Kind, e.File, size)
		}
		tw.Flush()
		return exitOK
	default:
		fmt.Fprintf(stderr, "agorad model: unknown subcommand %q (want fetch, import or list)\n", args[0])
		return exitUsage
	}
}

func cmdModelFetch(ctx context.Context, args []string, stdout, stderr io.Writer, client *http.Client) int {
	fs := flag.NewFlagSet("agorad model fetch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "models", "directory to download into")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: agorad model fetch NAME [--dir DIR]\n\nDownloads a catalog model (agorad model list) and verifies its sha256.")
		fs.PrintDefaults()
	}
	// Flags may come before or after NAME.
	if err := fs.Parse(args); err != nil {
		return usageCode(err)
	}
	var names []string
	for fs.NArg() > 0 {
		names = append(names, fs.Arg(0))
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return usageCode(err)
		}
	}
	if len(names) != 1 {
		fmt.Fprintln(stderr, "agorad model fetch: give exactly one model NAME (agorad model list shows them)")
		return exitUsage
	}
	e, ok := model.Lookup(names[0])
	if ok {
		fmt.Fprintf(stderr, "fetching %s from %s\n", e.File, e.URL)
	}
	path, err := model.Fetch(ctx, names[0], *dir, client)
	if err != nil {
		fmt.Fprintf(stderr, "agorad model fetch: %v\n", err)
		if !ok {
			return exitUsage
		}
		return exitFailed
	}
	fmt.Fprintln(stdout, path)
	return exitOK
}

func cmdModelImport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agorad model import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "ggml-model.bin", "ggml file to write")
	typ := fs.String("type", model.TypeF16, "weight type: "+strings.Join(model.ImportTypes, ", "))
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: agorad model import SRC_DIR [--out FILE] [--type T]\n\n"+
			"Converts a CTranslate2 Whisper model directory (faster-whisper's format: model.bin,\n"+
			"config.json, vocabulary.json/.txt or tokenizer.json) into a ggml file whisper.cpp loads.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageCode(err)
	}
	var srcs []string
	for fs.NArg() > 0 {
		srcs = append(srcs, fs.Arg(0))
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return usageCode(err)
		}
	}
	if len(srcs) != 1 {
		fmt.Fprintln(stderr, "agorad model import: give exactly one CTranslate2 model directory")
		return exitUsage
	}
	res, err := model.Import(srcs[0], *out, *typ)
	if err != nil {
		fmt.Fprintf(stderr, "agorad model import: %v\n", err)
		return exitFailed
	}
	h := res.Header
	fmt.Fprintf(stderr, "imported %s: %d tensors, %s weights, %d mels, vocab %d (from %s), %d/%d layers, %.1f MB in %s\n",
		srcs[0], res.Tensors, res.Type, h.NMels, h.NVocab, res.Vocab, h.NAudioLayer, h.NTextLayer,
		float64(res.Bytes)/1e6, res.Duration.Round(time.Millisecond))
	fmt.Fprintf(stdout, "%s  %s\n", res.SHA256, res.Path)
	return exitOK
}
