package vad

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// ggmlMagic opens every ggml model file ("ggml" as a little-endian uint32).
const ggmlMagic = 0x67676d6c

// modelInfo is what checkModel learned from the file header.
type modelInfo struct {
	Type        string
	Version     [3]int32
	WindowSize  int
	ContextSize int
	Tensors     int
}

// checkModel walks the Silero ggml file layout (magic, model type, version,
// hyperparameters, tensor records) before libwhisper sees it. libwhisper
// treats a header with no tensors as an "empty test model" and then aborts
// the whole process in ggml while building the graph; a truncated tensor
// would load garbage. Both become errors naming the file here.
func checkModel(path string) (modelInfo, error) {
	var info modelInfo
	if path == "" {
		return info, errors.New("open VAD model: no path given")
	}
	f, err := os.Open(path)
	if err != nil {
		return info, fmt.Errorf("open VAD model %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return info, fmt.Errorf("open VAD model %s: %w", path, err)
	}
	if fi.IsDir() {
		return info, fmt.Errorf("open VAD model %s: is a directory, not a model file", path)
	}
	size := fi.Size()
	invalid := func(format string, a ...any) error {
		return fmt.Errorf("open VAD model %s: not a valid Silero VAD ggml model: %s", path, fmt.Sprintf(format, a...))
	}

	var magic uint32
	if err := binary.Read(f, binary.LittleEndian, &magic); err != nil || magic != ggmlMagic {
		return info, invalid("bad magic (not a ggml file)")
	}
	var n int32
	if err := binary.Read(f, binary.LittleEndian, &n); err != nil || n <= 0 || n > 64 {
		return info, invalid("no model type string (a whisper model or another ggml file?)")
	}
	typ := make([]byte, n)
	if _, err := io.ReadFull(f, typ); err != nil {
		return info, invalid("truncated model type")
	}
	info.Type = string(typ)
	var hp [7]int32 // version[3], window, context, n_encoder_layers ... (layers read below)
	if err := binary.Read(f, binary.LittleEndian, hp[:6]); err != nil {
		return info, invalid("truncated header")
	}
	copy(info.Version[:], hp[:3])
	info.WindowSize, info.ContextSize = int(hp[3]), int(hp[4])
	layers := hp[5]
	if info.WindowSize <= 0 || info.WindowSize > 1<<16 || info.ContextSize < 0 || info.ContextSize > info.WindowSize || layers <= 0 || layers > 32 {
		return info, invalid("implausible header (window %d, context %d, %d encoder layers)", info.WindowSize, info.ContextSize, layers)
	}
	// Per layer in/out channels and kernel size, then LSTM input, LSTM
	// hidden, final conv in and out.
	if _, err := f.Seek(int64(3*layers+4)*4, io.SeekCurrent); err != nil {
		return info, invalid("truncated header")
	}

	for {
		var th [3]int32 // n_dims, name length, element type
		err := binary.Read(f, binary.LittleEndian, th[:])
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return info, invalid("truncated after %d tensors", info.Tensors)
		}
		dims, nameLen, typ := th[0], th[1], th[2]
		if dims < 0 || dims > 4 || nameLen <= 0 || nameLen > 256 {
			return info, invalid("bad record for tensor %d", info.Tensors+1)
		}
		ne := make([]int32, dims)
		if err := binary.Read(f, binary.LittleEndian, ne); err != nil {
			return info, invalid("truncated after %d tensors", info.Tensors)
		}
		name := make([]byte, nameLen)
		if _, err := io.ReadFull(f, name); err != nil {
			return info, invalid("truncated after %d tensors", info.Tensors)
		}
		var elem int64
		switch typ {
		case 0: // f32
			elem = 4
		case 1: // f16
			elem = 2
		default:
			return info, invalid("tensor %s has element type %d; only f32/f16 Silero exports are supported", name, typ)
		}
		count := int64(1)
		for _, d := range ne {
			if d <= 0 {
				return info, invalid("tensor %s has dimension %d", name, d)
			}
			count *= int64(d)
		}
		pos, err := f.Seek(count*elem, io.SeekCurrent)
		if err != nil || pos > size {
			return info, invalid("truncated in tensor %s (file is %d bytes)", name, size)
		}
		info.Tensors++
	}
	if info.Tensors == 0 {
		return info, invalid("no tensors (header only)")
	}
	return info, nil
}
