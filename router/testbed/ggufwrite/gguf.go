// Package ggufwrite writes GGUF v3 files (little-endian) for tests: header-only
// fixtures that declare big models without using disk, and small runnable
// llama models with random weights that a real llama-server can load.
package ggufwrite

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// GGML tensor types this writer can size. Other types are refused.
const (
	GGMLTypeF32 uint32 = 0
	GGMLTypeF16 uint32 = 1
	// GGMLTypeQ8_0 stores blocks of 32 values: an f16 scale and 32 int8s (34 bytes).
	GGMLTypeQ8_0 uint32 = 8
)

// GGUF metadata value types (gguf_type in ggml).
const (
	typeUint8   uint32 = 0
	typeInt8    uint32 = 1
	typeUint16  uint32 = 2
	typeInt16   uint32 = 3
	typeUint32  uint32 = 4
	typeInt32   uint32 = 5
	typeFloat32 uint32 = 6
	typeBool    uint32 = 7
	typeString  uint32 = 8
	typeArray   uint32 = 9
	typeUint64  uint32 = 10
	typeInt64   uint32 = 11
	typeFloat64 uint32 = 12
)

const (
	ggufMagic        = "GGUF"
	ggufVersion      = 3
	defaultAlignment = 32
	alignmentKey     = "general.alignment"
	// maxTensorName is GGML_MAX_NAME minus the terminating NUL.
	maxTensorName = 63
	maxDims       = 4
)

// KV is one metadata key/value pair. Value is one of uint8, int8, uint16, int16,
// uint32, int32, uint64, int64, float32, float64, bool, string, []string,
// []int32, []uint32 or []float32.
type KV struct {
	Key   string
	Value any
}

// Tensor declares one tensor. Shape is in GGUF order (ne0 first). Data, when
// not nil, must hold exactly the tensor's bytes; otherwise Fill, when set,
// streams them; otherwise the tensor is zero-filled.
type Tensor struct {
	Name  string
	Shape []uint64
	Type  uint32 // GGMLTypeF32, GGMLTypeF16 or GGMLTypeQ8_0
	Data  []byte
	// Fill writes exactly the tensor's bytes to w. It lets big tensors be
	// generated while streaming instead of being held in memory.
	Fill func(w io.Writer) error
}

// File is a GGUF file to write.
type File struct {
	KVs       []KV
	Tensors   []Tensor
	Alignment uint64 // 0 means 32
	// Sparse asks WriteFile (and WriteTo on a regular *os.File) to write the
	// header, then extend the file to its full size with Truncate instead of
	// writing tensor bytes: the file has its real size but takes no disk.
	Sparse bool

	// err is a construction error (bad options given to Llama or Header),
	// reported by every write.
	err error
}

// Size returns the number of bytes the file takes when written.
func (f *File) Size() (int64, error) {
	l, err := f.layout()
	if err != nil {
		return 0, err
	}
	return l.total, nil
}

// tensorBytes returns the size in bytes of a tensor's data.
func tensorBytes(t *Tensor) (uint64, error) {
	if t.Name == "" {
		return 0, errors.New("tensor with an empty name")
	}
	if len(t.Name) > maxTensorName {
		return 0, fmt.Errorf("tensor %q: name longer than %d bytes", t.Name, maxTensorName)
	}
	if len(t.Shape) == 0 || len(t.Shape) > maxDims {
		return 0, fmt.Errorf("tensor %q: %d dimensions, want 1 to %d", t.Name, len(t.Shape), maxDims)
	}
	var elemSize, block uint64 = 0, 1
	switch t.Type {
	case GGMLTypeF32:
		elemSize = 4
	case GGMLTypeF16:
		elemSize = 2
	case GGMLTypeQ8_0:
		elemSize, block = 34, 32
	default:
		return 0, fmt.Errorf("tensor %q: unsupported ggml type %d (only F32=0, F16=1 and Q8_0=8)", t.Name, t.Type)
	}
	if t.Shape[0]%block != 0 {
		return 0, fmt.Errorf("tensor %q: first dimension %d is not a multiple of the block size %d", t.Name, t.Shape[0], block)
	}
	n := elemSize
	for i, d := range t.Shape {
		if i == 0 {
			d /= block
		}
		if d == 0 {
			return 0, fmt.Errorf("tensor %q: dimension %d is 0", t.Name, i)
		}
		if n > math.MaxInt64/d {
			return 0, fmt.Errorf("tensor %q: size overflows", t.Name)
		}
		n *= d
	}
	if t.Data != nil && uint64(len(t.Data)) != n {
		return 0, fmt.Errorf("tensor %q: Data has %d bytes, shape %v of type %d needs %d",
			t.Name, len(t.Data), t.Shape, t.Type, n)
	}
	return n, nil
}

// layout is where everything goes in the file.
type layout struct {
	alignment uint64
	kvs       []KV     // KVs as written (general.alignment added when needed)
	offsets   []uint64 // tensor data offsets relative to the data section
	sizes     []uint64
	header    int64 // bytes before the padding that precedes the data section
	dataStart int64 // absolute offset of the data section
	total     int64
}

func alignUp(n, a uint64) uint64 { return (n + a - 1) / a * a }

// layout validates the file and computes its layout.
func (f *File) layout() (*layout, error) {
	if f.err != nil {
		return nil, f.err
	}
	l := &layout{alignment: f.Alignment}
	if l.alignment == 0 {
		l.alignment = defaultAlignment
	}
	if l.alignment%8 != 0 {
		return nil, fmt.Errorf("alignment %d is not a multiple of 8", l.alignment)
	}
	seen := make(map[string]bool, len(f.KVs))
	hasAlignment := false
	for _, kv := range f.KVs {
		if kv.Key == "" {
			return nil, errors.New("metadata key is empty")
		}
		if seen[kv.Key] {
			return nil, fmt.Errorf("metadata key %q appears twice", kv.Key)
		}
		seen[kv.Key] = true
		if _, err := valueType(kv.Value); err != nil {
			return nil, fmt.Errorf("metadata key %q: %w", kv.Key, err)
		}
		if kv.Key == alignmentKey {
			hasAlignment = true
			v, ok := kv.Value.(uint32)
			if !ok {
				return nil, fmt.Errorf("metadata key %q must be a uint32, got %T", alignmentKey, kv.Value)
			}
			if uint64(v) != l.alignment {
				return nil, fmt.Errorf("metadata %s=%d disagrees with File.Alignment=%d", alignmentKey, v, l.alignment)
			}
		}
	}
	l.kvs = f.KVs
	if !hasAlignment && l.alignment != defaultAlignment {
		l.kvs = append(append([]KV(nil), f.KVs...), KV{alignmentKey, uint32(l.alignment)})
	}

	var hdr uint64 = 4 + 4 + 8 + 8
	for _, kv := range l.kvs {
		hdr += 8 + uint64(len(kv.Key)) + 4 + valueSize(kv.Value)
	}
	names := make(map[string]bool, len(f.Tensors))
	var off uint64
	for i := range f.Tensors {
		t := &f.Tensors[i]
		n, err := tensorBytes(t)
		if err != nil {
			return nil, err
		}
		if names[t.Name] {
			return nil, fmt.Errorf("tensor %q appears twice", t.Name)
		}
		names[t.Name] = true
		hdr += 8 + uint64(len(t.Name)) + 4 + 8*uint64(len(t.Shape)) + 4 + 8
		off = alignUp(off, l.alignment)
		l.offsets = append(l.offsets, off)
		l.sizes = append(l.sizes, n)
		off += n
	}
	l.header = int64(hdr)
	l.dataStart = int64(alignUp(hdr, l.alignment))
	l.total = l.dataStart + int64(alignUp(off, l.alignment))
	return l, nil
}

// valueType returns the GGUF type of a metadata value.
func valueType(v any) (uint32, error) {
	switch v.(type) {
	case uint8:
		return typeUint8, nil
	case int8:
		return typeInt8, nil
	case uint16:
		return typeUint16, nil
	case int16:
		return typeInt16, nil
	case uint32:
		return typeUint32, nil
	case int32:
		return typeInt32, nil
	case uint64:
		return typeUint64, nil
	case int64:
		return typeInt64, nil
	case float32:
		return typeFloat32, nil
	case float64:
		return typeFloat64, nil
	case bool:
		return typeBool, nil
	case string:
		return typeString, nil
	case []string, []int32, []uint32, []float32:
		return typeArray, nil
	case nil:
		return 0, errors.New("value is nil")
	default:
		return 0, fmt.Errorf("unsupported value type %T", v)
	}
}

// valueSize returns the encoded size of a value (without its type tag).
func valueSize(v any) uint64 {
	switch x := v.(type) {
	case uint8, int8, bool:
		return 1
	case uint16, int16:
		return 2
	case uint32, int32, float32:
		return 4
	case uint64, int64, float64:
		return 8
	case string:
		return 8 + uint64(len(x))
	case []string:
		n := uint64(4 + 8)
		for _, s := range x {
			n += 8 + uint64(len(s))
		}
		return n
	case []int32:
		return 4 + 8 + 4*uint64(len(x))
	case []uint32:
		return 4 + 8 + 4*uint64(len(x))
	case []float32:
		return 4 + 8 + 4*uint64(len(x))
	}
	return 0
}

// encoder appends little-endian GGUF encodings to a byte slice.
type encoder struct{ b []byte }

func (e *encoder) u32(v uint32) { e.b = binary.LittleEndian.AppendUint32(e.b, v) }
func (e *encoder) u64(v uint64) { e.b = binary.LittleEndian.AppendUint64(e.b, v) }
func (e *encoder) str(s string) { e.u64(uint64(len(s))); e.b = append(e.b, s...) }

// value appends a value without its type tag. valueType has accepted it.
func (e *encoder) value(v any) {
	switch x := v.(type) {
	case uint8:
		e.b = append(e.b, x)
	case int8:
		e.b = append(e.b, byte(x))
	case bool:
		if x {
			e.b = append(e.b, 1)
		} else {
			e.b = append(e.b, 0)
		}
	case uint16:
		e.b = binary.LittleEndian.AppendUint16(e.b, x)
	case int16:
		e.b = binary.LittleEndian.AppendUint16(e.b, uint16(x))
	case uint32:
		e.u32(x)
	case int32:
		e.u32(uint32(x))
	case float32:
		e.u32(math.Float32bits(x))
	case uint64:
		e.u64(x)
	case int64:
		e.u64(uint64(x))
	case float64:
		e.u64(math.Float64bits(x))
	case string:
		e.str(x)
	case []string:
		e.u32(typeString)
		e.u64(uint64(len(x)))
		for _, s := range x {
			e.str(s)
		}
	case []int32:
		e.u32(typeInt32)
		e.u64(uint64(len(x)))
		for _, n := range x {
			e.u32(uint32(n))
		}
	case []uint32:
		e.u32(typeUint32)
		e.u64(uint64(len(x)))
		for _, n := range x {
			e.u32(n)
		}
	case []float32:
		e.u32(typeFloat32)
		e.u64(uint64(len(x)))
		for _, n := range x {
			e.u32(math.Float32bits(n))
		}
	}
}

// encodeHeader returns the header: magic, counts, KVs and tensor infos,
// followed by the padding up to the data section.
func (f *File) encodeHeader(l *layout) []byte {
	e := &encoder{b: make([]byte, 0, l.dataStart)}
	e.b = append(e.b, ggufMagic...)
	e.u32(ggufVersion)
	e.u64(uint64(len(f.Tensors)))
	e.u64(uint64(len(l.kvs)))
	for _, kv := range l.kvs {
		e.str(kv.Key)
		t, _ := valueType(kv.Value)
		e.u32(t)
		e.value(kv.Value)
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		e.str(t.Name)
		e.u32(uint32(len(t.Shape)))
		for _, d := range t.Shape {
			e.u64(d)
		}
		e.u32(t.Type)
		e.u64(l.offsets[i])
	}
	e.b = append(e.b, make([]byte, l.dataStart-int64(len(e.b)))...)
	return e.b
}
