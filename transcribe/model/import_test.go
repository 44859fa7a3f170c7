package model

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agora/agorad/audio/ggml"
	"github.com/agora/agorad/audio/testaudio"
)

// ct2Tensor is a variable for writeCT2; data nil means a scalar int16.
type ct2Tensor struct {
	name  string
	shape []int
	data  []float32
	i16   int16
}

// writeCT2 writes a CTranslate2 model.bin (binary version 6) the way
// model_spec.py serialises one: variables sorted by name, then aliases.
func writeCT2(t *testing.T, path, spec string, vars []ct2Tensor, aliases map[string]string) {
	t.Helper()
	var b bytes.Buffer
	str := func(s string) {
		binary.Write(&b, binary.LittleEndian, uint16(len(s)+1))
		b.WriteString(s)
		b.WriteByte(0)
	}
	binary.Write(&b, binary.LittleEndian, uint32(6))
	str(spec)
	binary.Write(&b, binary.LittleEndian, uint32(3))
	binary.Write(&b, binary.LittleEndian, uint32(len(vars)))
	for _, v := range vars {
		str(v.name)
		b.WriteByte(byte(len(v.shape)))
		for _, d := range v.shape {
			binary.Write(&b, binary.LittleEndian, uint32(d))
		}
		if v.data == nil {
			b.WriteByte(ct2Int16)
			binary.Write(&b, binary.LittleEndian, uint32(2))
			binary.Write(&b, binary.LittleEndian, v.i16)
			continue
		}
		b.WriteByte(ct2Float32)
		binary.Write(&b, binary.LittleEndian, uint32(4*len(v.data)))
		binary.Write(&b, binary.LittleEndian, v.data)
	}
	binary.Write(&b, binary.LittleEndian, uint32(len(aliases)))
	for a, target := range aliases {
		str(a)
		str(target)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// miniWhisper writes a one-layer Whisper in CTranslate2's layout whose every
// weight is distinct (variable k holds 1000*k + index), so where each ggml
// tensor came from can be checked.
func miniWhisper(t *testing.T, dir string, vocab []string) map[string][]float32 {
	t.Helper()
	const d, mels = 64, 80
	shapes := map[string][]int{
		"encoder/conv1/weight": {d, mels, 3}, "encoder/conv1/bias": {d},
		"encoder/conv2/weight": {d, d, 3}, "encoder/conv2/bias": {d},
		"encoder/position_encodings/encodings": {8, d},
		"encoder/layer_norm/gamma":             {d}, "encoder/layer_norm/beta": {d},
		"decoder/embeddings/weight":            {len(vocab), d},
		"decoder/position_encodings/encodings": {4, d},
		"decoder/layer_norm/gamma":             {d}, "decoder/layer_norm/beta": {d},
	}
	lin := func(p string, out, in int) {
		shapes[p+"/weight"], shapes[p+"/bias"] = []int{out, in}, []int{out}
	}
	ln := func(p string) { shapes[p+"/gamma"], shapes[p+"/beta"] = []int{d}, []int{d} }
	for _, side := range []string{"encoder", "decoder"} {
		p := side + "/layer_0/"
		ln(p + "self_attention/layer_norm")
		lin(p+"self_attention/linear_0", 3*d, d)
		lin(p+"self_attention/linear_1", d, d)
		ln(p + "ffn/layer_norm")
		lin(p+"ffn/linear_0", 4*d, d)
		lin(p+"ffn/linear_1", d, 4*d)
	}
	ln("decoder/layer_0/attention/layer_norm")
	lin("decoder/layer_0/attention/linear_0", d, d)
	lin("decoder/layer_0/attention/linear_1", 2*d, d)
	lin("decoder/layer_0/attention/linear_2", d, d)
	var names []string
	for n := range shapes {
		names = append(names, n)
	}
	sortStrings(names)
	values := map[string][]float32{}
	var vars []ct2Tensor
	for k, n := range names {
		size := 1
		for _, x := range shapes[n] {
			size *= x
		}
		data := make([]float32, size)
		for i := range data {
			data[i] = float32(1000*k + i%1000) // exact in f16 only for small values; checked as f32 below
		}
		values[n] = data
		vars = append(vars, ct2Tensor{name: n, shape: shapes[n], data: data})
	}
	vars = append(vars, ct2Tensor{name: "encoder/num_heads", i16: 1}, ct2Tensor{name: "decoder/num_heads", i16: 1})
	writeCT2(t, filepath.Join(dir, "model.bin"), "WhisperSpec", vars, map[string]string{"decoder/projection/weight": "decoder/embeddings/weight"})
	if err := os.WriteFile(filepath.Join(dir, "vocabulary.txt"), []byte(strings.Join(vocab, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return values
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// ggmlFile is a parsed whisper ggml file (test reader, independent of the writer).
type ggmlFile struct {
	h       ggml.WhisperHeader
	filters []float32
	vocab   []string
	tensors map[string]ggmlTensor
}

type ggmlTensor struct {
	ne   []int32
	typ  int32
	data []byte
}

func readGGML(t *testing.T, path string) ggmlFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := bytes.NewReader(b)
	rd := func(v any) {
		if err := binary.Read(r, binary.LittleEndian, v); err != nil {
			t.Fatalf("read %s: %v", path, err)
		}
	}
	var g ggmlFile
	var magic uint32
	rd(&magic)
	if magic != 0x67676d6c {
		t.Fatalf("magic %#x", magic)
	}
	rd(&g.h)
	var nm, nf int32
	rd(&nm)
	rd(&nf)
	g.filters = make([]float32, nm*nf)
	rd(g.filters)
	var nv int32
	rd(&nv)
	for i := int32(0); i < nv; i++ {
		var n int32
		rd(&n)
		w := make([]byte, n)
		rd(w)
		g.vocab = append(g.vocab, string(w))
	}
	g.tensors = map[string]ggmlTensor{}
	for r.Len() > 0 {
		var th [3]int32
		rd(&th)
		var tt ggmlTensor
		tt.ne = make([]int32, th[0])
		rd(tt.ne)
		name := make([]byte, th[1])
		rd(name)
		tt.typ = th[2]
		elems := 1
		for _, x := range tt.ne {
			elems *= int(x)
		}
		size := map[int32]int{ggmlF32: 4 * elems, ggmlF16: 2 * elems, ggmlQ8_0: elems / 32 * 34, ggmlQ4_0: elems / 32 * 18}[tt.typ]
		tt.data = make([]byte, size)
		if _, err := io.ReadFull(r, tt.data); err != nil {
			t.Fatalf("tensor %s: %v", name, err)
		}
		g.tensors[string(name)] = tt
	}
	return g
}

func (tt ggmlTensor) floats() []float32 {
	var out []float32
	switch tt.typ {
	case ggmlF32:
		for i := 0; i < len(tt.data); i += 4 {
			out = append(out, math.Float32frombits(binary.LittleEndian.Uint32(tt.data[i:])))
		}
	case ggmlF16:
		for i := 0; i < len(tt.data); i += 2 {
			out = append(out, halfToFloat(binary.LittleEndian.Uint16(tt.data[i:])))
		}
	case ggmlQ8_0:
		for i := 0; i < len(tt.data); i += 34 {
			d := halfToFloat(binary.LittleEndian.Uint16(tt.data[i:]))
			for j := 0; j < 32; j++ {
				out = append(out, d*float32(int8(tt.data[i+2+j])))
			}
		}
	case ggmlQ4_0:
		for i := 0; i < len(tt.data); i += 18 {
			d := halfToFloat(binary.LittleEndian.Uint16(tt.data[i:]))
			var blk [32]float32
			for j := 0; j < 16; j++ {
				blk[j] = d * float32(int(tt.data[i+2+j]&15)-8)
				blk[16+j] = d * float32(int(tt.data[i+2+j]>>4)-8)
			}
			out = append(out, blk[:]...)
		}
	}
	return out
}

// TestImportLayout checks, on a synthetic one-layer model, that every
// tensor comes from the right CTranslate2 variable and slice, with
// whisper.cpp's names, dimension order and types.
func TestImportLayout(t *testing.T) {
	src := t.TempDir()
	vocab := []string{"a", "Ġb", "Ċ", "<|endoftext|>", "<|startoftranscript|>"}
	vals := miniWhisper(t, src, vocab)
	for _, typ := range ImportTypes {
		t.Run(typ, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "m.bin")
			res, err := Import(src, out, typ)
			if err != nil {
				t.Fatal(err)
			}
			g := readGGML(t, out)
			wantFType := map[string]int32{TypeF32: 0, TypeF16: 1, TypeQ8_0: 2007, TypeQ4_0: 2002}[typ]
			want := ggml.WhisperHeader{NVocab: 5, NAudioCtx: 8, NAudioState: 64, NAudioHead: 1, NAudioLayer: 1,
				NTextCtx: 4, NTextState: 64, NTextHead: 1, NTextLayer: 1, NMels: 80, FType: wantFType}
			if g.h != want || res.Header != want {
				t.Fatalf("header %+v (reported %+v), want %+v", g.h, res.Header, want)
			}
			if got := strings.Join(g.vocab, "|"); got != "a| b|\n" {
				t.Errorf("vocabulary %q, want the bytes of the tokens before <|endoftext|>", got)
			}
			if len(g.filters) != 80*201 {
				t.Errorf("%d mel filter values", len(g.filters))
			}
			if res.Tensors != len(g.tensors) || len(g.tensors) != 7+15+4+24 { // encoder: 7 + 15 a block; decoder: 4 + 24 a block
				t.Errorf("%d tensors (reported %d)", len(g.tensors), res.Tensors)
			}
			const d = 64
			cases := []struct {
				ggml, ct2  string
				from, to   int // element range of the CTranslate2 variable
				ne         []int32
				typ        int32 // for f16 files; f32 files are all f32
				quantizing bool
			}{
				{"encoder.positional_embedding", "encoder/position_encodings/encodings", 0, 8 * d, []int32{d, 8}, ggmlF32, false},
				{"encoder.conv1.weight", "encoder/conv1/weight", 0, d * 80 * 3, []int32{3, 80, d}, ggmlF16, false},
				{"encoder.conv1.bias", "encoder/conv1/bias", 0, d, []int32{1, d}, ggmlF32, false},
				{"encoder.blocks.0.attn.query.weight", "encoder/layer_0/self_attention/linear_0/weight", 0, d * d, []int32{d, d}, ggmlF16, true},
				{"encoder.blocks.0.attn.key.weight", "encoder/layer_0/self_attention/linear_0/weight", d * d, 2 * d * d, []int32{d, d}, ggmlF16, true},
				{"encoder.blocks.0.attn.value.weight", "encoder/layer_0/self_attention/linear_0/weight", 2 * d * d, 3 * d * d, []int32{d, d}, ggmlF16, true},
				{"encoder.blocks.0.attn.value.bias", "encoder/layer_0/self_attention/linear_0/bias", 2 * d, 3 * d, []int32{d}, ggmlF32, false},
				{"encoder.blocks.0.mlp.0.weight", "encoder/layer_0/ffn/linear_0/weight", 0, 4 * d * d, []int32{d, 4 * d}, ggmlF16, true},
				{"encoder.ln_post.weight", "encoder/layer_norm/gamma", 0, d, []int32{d}, ggmlF32, false},
				{"decoder.token_embedding.weight", "decoder/embeddings/weight", 0, 5 * d, []int32{d, 5}, ggmlF16, true},
				{"decoder.blocks.0.cross_attn.key.weight", "decoder/layer_0/attention/linear_1/weight", 0, d * d, []int32{d, d}, ggmlF16, true},
				{"decoder.blocks.0.cross_attn.value.bias", "decoder/layer_0/attention/linear_1/bias", d, 2 * d, []int32{d}, ggmlF32, false},
				{"decoder.blocks.0.cross_attn.out.weight", "decoder/layer_0/attention/linear_2/weight", 0, d * d, []int32{d, d}, ggmlF16, true},
				{"decoder.blocks.0.attn_ln.bias", "decoder/layer_0/self_attention/layer_norm/beta", 0, d, []int32{d}, ggmlF32, false},
				{"decoder.ln.bias", "decoder/layer_norm/beta", 0, d, []int32{d}, ggmlF32, false},
			}
			for _, c := range cases {
				tt, ok := g.tensors[c.ggml]
				if !ok {
					t.Errorf("no tensor %s", c.ggml)
					continue
				}
				wantType := c.typ
				switch {
				case typ == TypeF32:
					wantType = ggmlF32
				case typ == TypeQ8_0 && c.quantizing:
					wantType = ggmlQ8_0
				case typ == TypeQ4_0 && c.quantizing:
					wantType = ggmlQ4_0
				}
				if tt.typ != wantType || fmt.Sprint(tt.ne) != fmt.Sprint(c.ne) {
					t.Errorf("%s: type %d dims %v, want type %d dims %v", c.ggml, tt.typ, tt.ne, wantType, c.ne)
					continue
				}
				src := vals[c.ct2][c.from:c.to]
				got := tt.floats()
				for i := range src {
					// f16 keeps 11 significant bits, q8_0 about 7 of a block's
					// maximum, q4_0 about 3.
					tol := float64(src[i]) * 1e-3
					switch tt.typ {
					case ggmlQ8_0:
						tol = 1000 * float64(len(vals)) / 127
					case ggmlQ4_0:
						tol = 1000 * float64(len(vals)) / 8
					}
					if math.Abs(float64(got[i]-src[i])) > tol {
						t.Errorf("%s[%d] = %g, want %g (from %s[%d])", c.ggml, i, got[i], src[i], c.ct2, c.from+i)
						break
					}
				}
			}
			for _, absent := range []string{"encoder.blocks.0.attn.key.bias", "decoder.blocks.0.cross_attn.key.bias", "decoder.proj.weight"} {
				if _, ok := g.tensors[absent]; ok {
					t.Errorf("tensor %s written; whisper.cpp's loader rejects it", absent)
				}
			}
		})
	}
}

// TestImportErrors: each broken input gives an error naming the file at fault.
func TestImportErrors(t *testing.T) {
	vocab := []string{"a", "Ġb", "<|endoftext|>"}
	good := t.TempDir()
	miniWhisper(t, good, vocab)
	modelBin, _ := os.ReadFile(filepath.Join(good, "model.bin"))

	cases := []struct {
		name  string
		setup func(t *testing.T, dir string) string // returns the source to import
		want  []string                              // substrings of the error ("DIR" is replaced)
	}{
		{"missing directory", func(t *testing.T, dir string) string { return filepath.Join(dir, "nope") },
			[]string{"DIR/nope", "no such file"}},
		{"a file, not a directory", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "model.bin")
			os.WriteFile(p, modelBin, 0o644)
			return p
		}, []string{"DIR/model.bin is a file"}},
		{"model.bin missing", func(t *testing.T, dir string) string {
			os.WriteFile(filepath.Join(dir, "vocabulary.txt"), []byte("a\n"), 0o644)
			return dir
		}, []string{"DIR/model.bin", "no such file"}},
		{"model.bin empty", func(t *testing.T, dir string) string {
			os.WriteFile(filepath.Join(dir, "model.bin"), nil, 0o644)
			return dir
		}, []string{"DIR/model.bin", "truncated in the header"}},
		{"model.bin truncated in a variable", func(t *testing.T, dir string) string {
			os.WriteFile(filepath.Join(dir, "model.bin"), modelBin[:len(modelBin)/2], 0o644)
			return dir
		}, []string{"DIR/model.bin", "truncated in variable"}},
		{"model.bin with trailing garbage", func(t *testing.T, dir string) string {
			os.WriteFile(filepath.Join(dir, "model.bin"), append(append([]byte(nil), modelBin...), 1, 2, 3), 0o644)
			return dir
		}, []string{"DIR/model.bin", "3 unexpected bytes"}},
		{"not CTranslate2 at all", func(t *testing.T, dir string) string {
			os.WriteFile(filepath.Join(dir, "model.bin"), []byte("lmgg\x00\x00\x00\x00 a ggml file, say"), 0o644)
			return dir
		}, []string{"DIR/model.bin", "binary version"}},
		{"foreign architecture", func(t *testing.T, dir string) string {
			writeCT2(t, filepath.Join(dir, "model.bin"), "TransformerSpec",
				[]ct2Tensor{{name: "encoder/embeddings_0/weight", shape: []int{2, 2}, data: []float32{1, 2, 3, 4}}}, nil)
			return dir
		}, []string{"DIR/model.bin", `"TransformerSpec" model, not Whisper`}},
		{"Whisper spec without the weights", func(t *testing.T, dir string) string {
			writeCT2(t, filepath.Join(dir, "model.bin"), "WhisperSpec",
				[]ct2Tensor{{name: "decoder/embeddings/weight", shape: []int{2, 2}, data: []float32{1, 2, 3, 4}}}, nil)
			return dir
		}, []string{"DIR/model.bin", "not a Whisper model"}},
		{"no vocabulary", func(t *testing.T, dir string) string {
			os.WriteFile(filepath.Join(dir, "model.bin"), modelBin, 0o644)
			return dir
		}, []string{"DIR has none of vocabulary.json, vocabulary.txt, tokenizer.json"}},
		{"vocabulary of another model", func(t *testing.T, dir string) string {
			os.WriteFile(filepath.Join(dir, "model.bin"), modelBin, 0o644)
			os.WriteFile(filepath.Join(dir, "vocabulary.txt"), []byte("a\n<|endoftext|>\n"), 0o644)
			return dir
		}, []string{"DIR/vocabulary.txt", "2 tokens", "have 3"}},
		{"broken config.json", func(t *testing.T, dir string) string {
			os.WriteFile(filepath.Join(dir, "model.bin"), modelBin, 0o644)
			os.WriteFile(filepath.Join(dir, "vocabulary.txt"), []byte(strings.Join(vocab, "\n")), 0o644)
			os.WriteFile(filepath.Join(dir, "config.json"), []byte("{\"lang_ids\": ["), 0o644)
			return dir
		}, []string{"DIR/config.json"}},
		{"preprocessor for another model", func(t *testing.T, dir string) string {
			os.WriteFile(filepath.Join(dir, "model.bin"), modelBin, 0o644)
			os.WriteFile(filepath.Join(dir, "vocabulary.txt"), []byte(strings.Join(vocab, "\n")), 0o644)
			os.WriteFile(filepath.Join(dir, "preprocessor_config.json"), []byte(`{"feature_size": 128}`), 0o644)
			return dir
		}, []string{"DIR/preprocessor_config.json", "128 mels", "wants 80"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			src := c.setup(t, dir)
			out := filepath.Join(t.TempDir(), "out.bin")
			_, err := Import(src, out, "")
			if err == nil {
				t.Fatal("import succeeded")
			}
			for _, w := range c.want {
				if w = strings.ReplaceAll(w, "DIR", dir); !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if _, serr := os.Stat(out); serr == nil {
				t.Error("a failed import left its output file")
			}
			if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".*.part")); len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}

// TestImportRealTinyEn imports the real tiny.en from the PyPI cache and
// checks it has the shape of OpenAI's tiny.en and that the import is
// reproducible (make models records its sha256).
func TestImportRealTinyEn(t *testing.T) {
	src := testaudio.CT2Model(t, "tiny.en")
	dir := t.TempDir()
	a, err := Import(src, filepath.Join(dir, "a.bin"), TypeF16)
	if err != nil {
		t.Fatal(err)
	}
	want := ggml.WhisperHeader{NVocab: 51864, NAudioCtx: 1500, NAudioState: 384, NAudioHead: 6, NAudioLayer: 4,
		NTextCtx: 448, NTextState: 384, NTextHead: 6, NTextLayer: 4, NMels: 80, FType: 1}
	if a.Header != want || a.Tensors != 167 {
		t.Fatalf("header %+v with %d tensors, want %+v with 167 (as whisper.cpp's tiny.en)", a.Header, a.Tensors, want)
	}
	g := readGGML(t, a.Path)
	if len(g.vocab) != 50256 || g.vocab[50255] != " gazed" || g.vocab[262] != " the" {
		t.Errorf("vocabulary: %d tokens, 262=%q, 50255=%q; want 50256 (the GPT-2 ranks), \" the\", \" gazed\"",
			len(g.vocab), g.vocab[262], g.vocab[50255])
	}
	b, err := Import(src, filepath.Join(dir, "b.bin"), TypeF16)
	if err != nil {
		t.Fatal(err)
	}
	if a.SHA256 != b.SHA256 {
		t.Errorf("two imports differ: %s vs %s", a.SHA256, b.SHA256)
	}
	// The vocabulary from the Hugging Face tokenizer.json alone (as a
	// directory without CTranslate2's vocabulary.txt has it) gives the
	// same file.
	only := t.TempDir()
	if err := os.Symlink(filepath.Join(src, "model.bin"), filepath.Join(only, "model.bin")); err != nil {
		t.Fatal(err)
	}
	tj, err := os.ReadFile(filepath.Join(src, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(only, "tokenizer.json"), tj, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Import(only, filepath.Join(dir, "c.bin"), TypeF16)
	if err != nil {
		t.Fatal(err)
	}
	if c.SHA256 != a.SHA256 || filepath.Base(c.Vocab) != "tokenizer.json" {
		t.Errorf("import with tokenizer.json only: sha256 %s from %s, want %s (as from vocabulary.txt)", c.SHA256, c.Vocab, a.SHA256)
	}
}
