package model

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// CTranslate2 data type ids (include/ctranslate2/types.h).
const (
	ct2Float32  = 0
	ct2Int8     = 1
	ct2Int16    = 2
	ct2Int32    = 3
	ct2Float16  = 4
	ct2BFloat16 = 5
)

var ct2ItemSize = map[uint8]int64{ct2Float32: 4, ct2Int8: 1, ct2Int16: 2, ct2Int32: 4, ct2Float16: 2, ct2BFloat16: 2}

// ct2Var is one variable of a CTranslate2 model.bin: where its data is.
type ct2Var struct {
	name  string
	shape []int
	dtype uint8
	off   int64
	size  int64
}

// ct2Model indexes a CTranslate2 model.bin (binary versions 4 to 6, the
// ones every current converter writes) without loading it: variables are
// read one at a time, so a large model does not need its size in memory.
type ct2Model struct {
	path     string
	f        *os.File
	spec     string
	revision uint32
	vars     map[string]*ct2Var
	aliases  map[string]string
}

// openCT2 reads the variable index of path. Errors name the file and say
// what was wrong (truncated, not a CTranslate2 model, unknown version).
func openCT2(path string) (*ct2Model, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("CTranslate2 model %s: %w", path, err)
	}
	m, err := indexCT2(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	return m, nil
}

func indexCT2(f *os.File, path string) (*ct2Model, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("CTranslate2 model %s: %w", path, err)
	}
	size := st.Size()
	m := &ct2Model{path: path, f: f, vars: map[string]*ct2Var{}, aliases: map[string]string{}}
	r := &offReader{r: bufio.NewReaderSize(f, 1<<16)}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("CTranslate2 model %s: %s", path, fmt.Sprintf(format, a...))
	}
	trunc := func(what string) error {
		return bad("truncated in %s (file is %d bytes)", what, size)
	}
	var version uint32
	if err := binary.Read(r, binary.LittleEndian, &version); err != nil {
		return nil, trunc("the header")
	}
	if version < 4 || version > 6 {
		return nil, bad("binary version %d is not a CTranslate2 format this importer reads (want 4 to 6): not a CTranslate2 model.bin, or one from an old or newer converter", version)
	}
	if m.spec, err = readCT2String(r); err != nil {
		return nil, trunc("the header")
	}
	if err := binary.Read(r, binary.LittleEndian, &m.revision); err != nil {
		return nil, trunc("the header")
	}
	var n uint32
	if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
		return nil, trunc("the header")
	}
	if n == 0 || n > 1<<20 {
		return nil, bad("implausible variable count %d", n)
	}
	for i := uint32(0); i < n; i++ {
		name, err := readCT2String(r)
		if err != nil {
			return nil, trunc(fmt.Sprintf("variable %d of %d", i+1, n))
		}
		var rank uint8
		if err := binary.Read(r, binary.LittleEndian, &rank); err != nil {
			return nil, trunc("variable " + name)
		}
		dims := make([]uint32, rank)
		if err := binary.Read(r, binary.LittleEndian, dims); err != nil {
			return nil, trunc("variable " + name)
		}
		var dtype uint8
		var nbytes uint32
		if err := binary.Read(r, binary.LittleEndian, &dtype); err != nil {
			return nil, trunc("variable " + name)
		}
		if err := binary.Read(r, binary.LittleEndian, &nbytes); err != nil {
			return nil, trunc("variable " + name)
		}
		item, ok := ct2ItemSize[dtype]
		if !ok {
			return nil, bad("variable %s has unknown data type %d", name, dtype)
		}
		v := &ct2Var{name: name, dtype: dtype, off: r.off, size: int64(nbytes)}
		elems := int64(1)
		for _, d := range dims {
			v.shape = append(v.shape, int(d))
			elems *= int64(d)
		}
		if elems*item != v.size {
			return nil, bad("variable %s: %d bytes do not hold shape %v", name, v.size, v.shape)
		}
		if v.off+v.size > size {
			return nil, trunc("variable " + name)
		}
		if _, err := r.Discard(int(v.size)); err != nil {
			return nil, trunc("variable " + name)
		}
		m.vars[name] = v
	}
	var na uint32
	if err := binary.Read(r, binary.LittleEndian, &na); err != nil {
		return nil, trunc("the alias table")
	}
	for i := uint32(0); i < na; i++ {
		alias, err := readCT2String(r)
		if err != nil {
			return nil, trunc("the alias table")
		}
		target, err := readCT2String(r)
		if err != nil {
			return nil, trunc("the alias table")
		}
		m.aliases[alias] = target
	}
	if r.off != size {
		return nil, bad("%d unexpected bytes after the alias table", size-r.off)
	}
	return m, nil
}

func (m *ct2Model) Close() error { return m.f.Close() }

// lookup finds a variable by name, following aliases.
func (m *ct2Model) lookup(name string) (*ct2Var, bool) {
	if t, ok := m.aliases[name]; ok {
		name = t
	}
	v, ok := m.vars[name]
	return v, ok
}

// scalar reads an integer scalar variable (num_heads and the like).
func (m *ct2Model) scalar(name string) (int, bool) {
	v, ok := m.lookup(name)
	if !ok || len(v.shape) != 0 {
		return 0, false
	}
	b := make([]byte, v.size)
	if _, err := m.f.ReadAt(b, v.off); err != nil {
		return 0, false
	}
	switch v.dtype {
	case ct2Int8:
		return int(int8(b[0])), true
	case ct2Int16:
		return int(int16(binary.LittleEndian.Uint16(b))), true
	case ct2Int32:
		return int(int32(binary.LittleEndian.Uint32(b))), true
	}
	return 0, false
}

// floats reads variable name as float32 values, whatever its stored type:
// float16/bfloat16 widen exactly; int8/int16 weights quantized by
// CTranslate2 are scaled back with their "<name>_scale" variable.
func (m *ct2Model) floats(name string) ([]float32, []int, error) {
	v, ok := m.lookup(name)
	if !ok {
		return nil, nil, fmt.Errorf("CTranslate2 model %s: variable %s is missing: not a Whisper model, or a truncated conversion", m.path, name)
	}
	b := make([]byte, v.size)
	if _, err := m.f.ReadAt(b, v.off); err != nil {
		return nil, nil, fmt.Errorf("CTranslate2 model %s: read %s: %w", m.path, name, unexpectedEOF(err))
	}
	n := int(v.size / ct2ItemSize[v.dtype])
	out := make([]float32, n)
	switch v.dtype {
	case ct2Float32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	case ct2Float16:
		for i := range out {
			out[i] = halfToFloat(binary.LittleEndian.Uint16(b[2*i:]))
		}
	case ct2BFloat16:
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
		}
	case ct2Int8, ct2Int16:
		scale, _, err := m.floats(v.name + "_scale")
		if err != nil {
			return nil, nil, fmt.Errorf("CTranslate2 model %s: quantized %s has no usable scale: %w", m.path, name, err)
		}
		rows := 1
		if len(v.shape) > 0 {
			rows = v.shape[0]
		}
		if len(scale) != rows && len(scale) != 1 {
			return nil, nil, fmt.Errorf("CTranslate2 model %s: %s has %d scales for %d rows", m.path, name, len(scale), rows)
		}
		cols := n / rows
		for i := range out {
			var q float32
			if v.dtype == ct2Int8 {
				q = float32(int8(b[i]))
			} else {
				q = float32(int16(binary.LittleEndian.Uint16(b[2*i:])))
			}
			s := scale[0]
			if len(scale) == rows {
				s = scale[i/cols]
			}
			out[i] = q / s
		}
	default:
		return nil, nil, fmt.Errorf("CTranslate2 model %s: variable %s has data type %d, not a weight type", m.path, name, v.dtype)
	}
	return out, v.shape, nil
}

// readCT2String reads a uint16 length (including the NUL) and the bytes.
func readCT2String(r *offReader) (string, error) {
	var n uint16
	if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
		return "", err
	}
	if n == 0 {
		return "", errors.New("empty string")
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", err
	}
	return string(b[:n-1]), nil
}

// offReader tracks the file offset of a buffered reader.
type offReader struct {
	r   *bufio.Reader
	off int64
}

func (o *offReader) Read(p []byte) (int, error) {
	n, err := o.r.Read(p)
	o.off += int64(n)
	return n, err
}

func (o *offReader) Discard(n int) (int, error) {
	d, err := o.r.Discard(n)
	o.off += int64(d)
	return d, err
}

func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
