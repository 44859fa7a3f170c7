package model

// CatalogEntry is an official model that `agorad model fetch NAME` can
// download. SHA256 is checked before the file is put in place; Size, when
// known, lets a download fail early on a short read (0 means unknown).
type CatalogEntry struct {
	Name   string // what the user types: "tiny", "base.en", "silero-v6.2.0"
	Kind   string // "whisper" or "vad"
	File   string // file name on disk
	URL    string
	SHA256 string
	Size   int64
	// Aliases are other file names the same bytes are published under
	// (whisper.cpp's repository keeps the Silero model as a test file);
	// model resolution accepts them too.
	Aliases []string
}

const (
	whisperHost = "https://huggingface.co/ggerganov/whisper.cpp/resolve/main/"
	vadHost     = "https://huggingface.co/ggml-org/whisper-vad/resolve/main/"
)

// Catalog lists the upstream ggml models. The sha256 values come from the
// Hugging Face LFS metadata of the upstream repositories, each cross-checked
// against at least one independent published list; the Silero entry is
// byte-identical to the copy in shared/models (same sha256 and size).
var Catalog = []CatalogEntry{
	{Name: "tiny", Kind: "whisper", File: "ggml-tiny.bin", URL: whisperHost + "ggml-tiny.bin",
		SHA256: "be07e048e1e599ad46341c8d2a135645097a538221678b7acdd1b1919c6e1b21", Size: 77691713},
	{Name: "tiny.en", Kind: "whisper", File: "ggml-tiny.en.bin", URL: whisperHost + "ggml-tiny.en.bin",
		SHA256: "921e4cf8686fdd993dcd081a5da5b6c365bfde1162e72b08d75ac75289920b1f"},
	{Name: "tiny.en-q8_0", Kind: "whisper", File: "ggml-tiny.en-q8_0.bin", URL: whisperHost + "ggml-tiny.en-q8_0.bin",
		SHA256: "5bc2b3860aa151a4c6e7bb095e1fcce7cf12c7b020ca08dcec0c6d018bb7dd94"},
	{Name: "base", Kind: "whisper", File: "ggml-base.bin", URL: whisperHost + "ggml-base.bin",
		SHA256: "60ed5bc3dd14eea856493d334349b405782ddcaf0028d4b5df4088345fba2efe", Size: 147951465},
	{Name: "base.en", Kind: "whisper", File: "ggml-base.en.bin", URL: whisperHost + "ggml-base.en.bin",
		SHA256: "a03779c86df3323075f5e796cb2ce5029f00ec8869eee3fdfb897afe36c6d002"},
	{Name: "base-q5_1", Kind: "whisper", File: "ggml-base-q5_1.bin", URL: whisperHost + "ggml-base-q5_1.bin",
		SHA256: "422f1ae452ade6f30a004d7e5c6a43195e4433bc370bf23fac9cc591f01a8898"},
	{Name: "small", Kind: "whisper", File: "ggml-small.bin", URL: whisperHost + "ggml-small.bin",
		SHA256: "1be3a9b2063867b937e64e2ec7483364a79917e157fa98c5d94b5c1fffea987b", Size: 487601967},
	{Name: "small.en", Kind: "whisper", File: "ggml-small.en.bin", URL: whisperHost + "ggml-small.en.bin",
		SHA256: "c6138d6d58ecc8322097e0f987c32f1be8bb0a18532a3f88f734d1bbf9c41e5d"},
	{Name: "medium", Kind: "whisper", File: "ggml-medium.bin", URL: whisperHost + "ggml-medium.bin",
		SHA256: "6c14d5adee5f86394037b4e4e8b59f1673b6cee10e3cf0b11bbdbee79c156208", Size: 1533763059},
	{Name: "medium.en", Kind: "whisper", File: "ggml-medium.en.bin", URL: whisperHost + "ggml-medium.en.bin",
		SHA256: "cc37e93478338ec7700281a7ac30a10128929eb8f427dda2e865faa8f6da4356"},
	{Name: "large-v3", Kind: "whisper", File: "ggml-large-v3.bin", URL: whisperHost + "ggml-large-v3.bin",
		SHA256: "64d182b440b98d5203c4f9bd541544d84c605196c4f7b845dfa11fb23594d1e2"},
	{Name: "large-v3-turbo", Kind: "whisper", File: "ggml-large-v3-turbo.bin", URL: whisperHost + "ggml-large-v3-turbo.bin",
		SHA256: "1fc70f774d38eb169993ac391eea357ef47c88757ef72ee5943879b7e8e2bc69", Size: 1624555275},
	{Name: "silero-v6.2.0", Kind: "vad", File: "ggml-silero-v6.2.0.bin", URL: vadHost + "ggml-silero-v6.2.0.bin",
		SHA256: "2aa269b785eeb53a82983a20501ddf7c1d9c48e33ab63a41391ac6c9f7fb6987", Size: 885098,
		Aliases: []string{"for-tests-silero-v6.2.0-ggml.bin"}},
}

// Lookup finds an official model by name ("base.en") or file name
// ("ggml-base.en.bin").
func Lookup(name string) (CatalogEntry, bool) {
	for _, e := range Catalog {
		if e.Name == name || e.File == name {
			return e, true
		}
	}
	return CatalogEntry{}, false
}
