package catalog

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"slices"
	"strings"
	"sync"

	gguf "github.com/gpustack/gguf-parser-go"
)

// Bounds of header reading. They are far above any real model and keep every allocation small
// whatever lengths and counts a file declares.
const (
	MaxHeaderBytes = 64 << 20 // metadata and tensor infos together; the Hub reads no more of a remote file
	maxKeyLen      = 64 << 10
	maxStringLen   = 16 << 20
	maxKVs         = 1 << 16
	maxTensors     = 1 << 20
	maxLayers      = 4096    // any *.block_count, and the per-layer arrays kept in memory
	maxTensorBytes = 1 << 60 // one tensor
	maxTotalBytes  = 1 << 62 // all tensors of a file
)

// GGUF value types.
const (
	tUint8 = iota
	tInt8
	tUint16
	tInt16
	tUint32
	tInt32
	tFloat32
	tBool
	tString
	tArray
	tUint64
	tInt64
	tFloat64
	tCount
)

var scalarSize = [tCount]uint64{1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8}

// keptArrays are the array keys whose items are kept, as gguf-parser-go's SkipLargeMetadata
// does; other arrays keep only their type, length, offset and size.
var keptArrays = []string{".feed_forward_length", ".attention.head_count", ".attention.head_count_kv", ".attention.sliding_window_pattern"}

// stringKeys must hold strings: gguf-parser-go reads them as strings without checking.
var stringKeys = map[string]bool{
	"general.architecture": true, "general.type": true, "general.name": true, "tokenizer.chat_template": true,
	"general.author": true, "general.url": true, "general.description": true, "general.license": true,
	"tokenizer.ggml.model": true, "clip.projector_type": true, "adapter.type": true,
}

// fileHeader is the decoded header of one GGUF file.
type fileHeader struct {
	version  gguf.GGUFVersion
	nTensors uint64
	nKVs     uint64
	kvs      []gguf.GGUFMetadataKV
	tensors  []gguf.GGUFTensorInfo
	end      int64        // offset just past the tensor infos
	size     int64        // file size
	tokens   *tokenDigest // tokenizer.ggml.tokens digested (vocab.go); nil without
}

var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

// readFile decodes the header of the GGUF file at path with bounded reads.
func readFile(path string) (*fileHeader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	return decodeHeader(f, st.Size())
}

// decodeHeader reads the header of a GGUF file of the given size from r: magic, version, counts,
// every key, value and tensor info. It reads at most MaxHeaderBytes and refuses what
// gguf-parser-go or llama.cpp would choke on: absurd lengths and counts, unknown types,
// overflowing tensor shapes, values the parser uses to size allocations.
func decodeHeader(r io.Reader, size int64) (*fileHeader, error) {
	switch {
	case size == 0:
		return nil, errors.New("empty file")
	case size < 24:
		return nil, fmt.Errorf("too short for a GGUF file (%d bytes)", size)
	}
	br := readers.Get().(*bufio.Reader)
	limit := min(size, MaxHeaderBytes)
	br.Reset(io.LimitReader(r, limit))
	defer func() {
		br.Reset(nil)
		readers.Put(br)
	}()
	h := &hdr{r: br, limit: limit}
	fh, err := h.file(size)
	if err != nil {
		return nil, err
	}
	return fh, nil
}

// hdr reads a header sequentially; the first failure sticks in err.
type hdr struct {
	r     *bufio.Reader
	pos   int64
	limit int64 // bytes that may be read: min(file size, MaxHeaderBytes)
	err   error
	buf   [8]byte

	tokens *tokenDigest // tokenizer.ggml.tokens, digested as its items go by (vocab.go)
	text   []byte       // a token's text being digested, reused
}

func (h *hdr) file(size int64) (*fileHeader, error) {
	var magic [4]byte
	h.read(magic[:])
	if h.err != nil {
		return nil, h.err
	}
	if err := checkMagic(magic); err != nil {
		return nil, err
	}
	version := h.u32()
	switch {
	case h.err != nil:
		return nil, h.err
	case version == 2 || version == 3:
	case version == 1:
		return nil, errors.New("GGUF version 1 is not supported")
	case bits.ReverseBytes32(version) <= 3:
		return nil, errors.New("big-endian GGUF is not supported")
	default:
		return nil, fmt.Errorf("unsupported GGUF version %d", version)
	}
	fh := &fileHeader{version: gguf.GGUFVersion(version), size: size}
	fh.nTensors, fh.nKVs = h.u64(), h.u64()
	if h.err != nil {
		return nil, h.err
	}
	if fh.nTensors > maxTensors {
		return nil, fmt.Errorf("absurd tensor count %d", fh.nTensors)
	}
	if fh.nKVs > maxKVs {
		return nil, fmt.Errorf("absurd metadata count %d", fh.nKVs)
	}
	fh.kvs = make([]gguf.GGUFMetadataKV, 0, min(fh.nKVs, 256))
	for i := uint64(0); i < fh.nKVs; i++ {
		kv, err := h.kv()
		if err != nil {
			if kv.Key != "" {
				return nil, fmt.Errorf("metadata %q: %w", kv.Key, err)
			}
			return nil, fmt.Errorf("metadata %d: %w", i, err)
		}
		fh.kvs = append(fh.kvs, kv)
	}
	fh.tensors = make([]gguf.GGUFTensorInfo, 0, min(fh.nTensors, 4096))
	var total uint64
	for i := uint64(0); i < fh.nTensors; i++ {
		ti, n, err := h.tensor()
		if err != nil {
			return nil, fmt.Errorf("tensor info %d: %w", i, err)
		}
		if total += n; total > maxTotalBytes {
			return nil, errors.New("absurd total tensor size")
		}
		fh.tensors = append(fh.tensors, ti)
	}
	fh.end = h.pos
	fh.tokens = h.tokens
	return fh, nil
}

func (h *hdr) fail(err error) { h.err = cmp.Or(h.err, err) }

// short explains a read past the end.
func (h *hdr) short() error {
	if h.limit == MaxHeaderBytes {
		return fmt.Errorf("header larger than %d MiB", MaxHeaderBytes>>20)
	}
	return fmt.Errorf("truncated at byte %d", h.pos)
}

func (h *hdr) read(b []byte) {
	if h.err != nil {
		return
	}
	n, err := io.ReadFull(h.r, b)
	h.pos += int64(n)
	if err != nil {
		h.fail(h.short())
	}
}

func (h *hdr) skip(n uint64) {
	if h.err != nil {
		return
	}
	if n > uint64(h.limit-h.pos) {
		h.fail(h.short())
		return
	}
	d, err := h.r.Discard(int(n))
	h.pos += int64(d)
	if err != nil {
		h.fail(h.short())
	}
}

func (h *hdr) u8() uint8 {
	h.read(h.buf[:1])
	return h.buf[0]
}

func (h *hdr) u16() uint16 {
	h.read(h.buf[:2])
	return binary.LittleEndian.Uint16(h.buf[:2])
}

func (h *hdr) u32() uint32 {
	h.read(h.buf[:4])
	return binary.LittleEndian.Uint32(h.buf[:4])
}

func (h *hdr) u64() uint64 {
	h.read(h.buf[:8])
	return binary.LittleEndian.Uint64(h.buf[:8])
}

// strLen reads a string's length prefix, refusing more than max bytes or than the header holds;
// false after a failure.
func (h *hdr) strLen(max uint64) (uint64, bool) {
	n := h.u64()
	switch {
	case h.err != nil:
	case n > max:
		h.fail(fmt.Errorf("absurd string length %d", n))
	case n > uint64(h.limit-h.pos):
		h.fail(h.short())
	}
	return n, h.err == nil
}

// str reads a length-prefixed string of at most max bytes; keep=false skips its bytes. Like
// gguf-parser-go it trims surrounding white space.
func (h *hdr) str(max uint64, keep bool) string {
	n, ok := h.strLen(max)
	if !ok || !keep {
		h.skip(n)
		return ""
	}
	b := make([]byte, n)
	h.read(b)
	return string(bytes.TrimSpace(b))
}

// scalar reads one non-string, non-array value as the Go type gguf-parser-go uses.
func (h *hdr) scalar(typ uint32) any {
	switch typ {
	case tUint8:
		return h.u8()
	case tInt8:
		return int8(h.u8())
	case tUint16:
		return h.u16()
	case tInt16:
		return int16(h.u16())
	case tUint32:
		return h.u32()
	case tInt32:
		return int32(h.u32())
	case tFloat32:
		return math.Float32frombits(h.u32())
	case tBool:
		return h.u8() != 0
	case tUint64:
		return h.u64()
	case tInt64:
		return int64(h.u64())
	case tFloat64:
		return math.Float64frombits(h.u64())
	}
	h.fail(fmt.Errorf("invalid value type %d", typ))
	return nil
}

// kv reads one metadata key and value.
func (h *hdr) kv() (gguf.GGUFMetadataKV, error) {
	var kv gguf.GGUFMetadataKV
	kv.Key = h.str(maxKeyLen, true)
	if h.err != nil {
		return kv, fmt.Errorf("key: %w", h.err)
	}
	if kv.Key == "" {
		return kv, errors.New("empty key")
	}
	typ := h.u32()
	switch {
	case h.err != nil:
		return kv, h.err
	case typ >= tCount:
		return kv, fmt.Errorf("invalid value type %d", typ)
	case stringKeys[kv.Key] && typ != tString:
		return kv, errors.New("must hold a string")
	}
	kv.ValueType = gguf.GGUFMetadataValueType(typ)
	switch typ {
	case tString:
		kv.Value = h.str(maxStringLen, true)
	case tArray:
		kv.Value = h.array(kv.Key)
	default:
		kv.Value = h.scalar(typ)
	}
	if h.err != nil {
		return kv, h.err
	}
	return kv, checkValue(kv)
}

// checkValue refuses values gguf-parser-go would use to size allocations or to divide by.
func checkValue(kv gguf.GGUFMetadataKV) error {
	num := func() (float64, bool) {
		if !kv.ValueType.IsNumeric() {
			return 0, false
		}
		return gguf.ValueNumeric[float64](kv), true
	}
	switch {
	case kv.Key == "general.alignment":
		a, ok := kv.Value.(uint32)
		if !ok || a == 0 || a&(a-1) != 0 || a > 1<<20 {
			return fmt.Errorf("invalid alignment %v", kv.Value)
		}
	case kv.Key == "general.file_type":
		if _, ok := num(); !ok {
			return fmt.Errorf("holds a %v, not a number", kv.ValueType)
		}
	case strings.HasSuffix(kv.Key, "block_count"):
		if v, ok := num(); !ok || !(v >= 0 && v <= maxLayers) {
			return fmt.Errorf("absurd block count %v", kv.Value)
		}
	case kv.Key == "split.tensors.count":
		if v, ok := num(); !ok || !(v >= 0 && v <= maxTensors) {
			return fmt.Errorf("absurd split tensor count %v", kv.Value)
		}
	}
	return nil
}

// array reads an array value. Only keptArrays keep their items.
func (h *hdr) array(key string) gguf.GGUFMetadataKVArrayValue {
	var v gguf.GGUFMetadataKVArrayValue
	v.StartOffset = h.pos
	typ := h.u32()
	v.Len = h.u64()
	if h.err != nil {
		return v
	}
	v.Type = gguf.GGUFMetadataValueType(typ)
	start := h.pos
	switch {
	case typ >= tCount:
		h.fail(fmt.Errorf("invalid array item type %d", typ))
		return v
	case typ == tArray:
		h.fail(errors.New("arrays of arrays are not supported"))
		return v
	case v.Len > uint64(h.limit-h.pos):
		h.fail(fmt.Errorf("absurd array length %d", v.Len))
		return v
	}
	keep := slices.ContainsFunc(keptArrays, func(s string) bool { return strings.HasSuffix(key, s) })
	if keep && v.Len > maxLayers {
		h.fail(fmt.Errorf("absurd per-layer array length %d", v.Len))
		return v
	}
	switch {
	case keep:
		v.Array = make([]any, v.Len)
		for i := range v.Array {
			if typ == tString {
				v.Array[i] = h.str(maxStringLen, true)
			} else {
				v.Array[i] = h.scalar(typ)
			}
		}
	case typ == tString && key == "tokenizer.ggml.tokens":
		h.digestTokens(v.Len)
	case typ == tString:
		for i := uint64(0); i < v.Len && h.err == nil; i++ {
			h.str(maxStringLen, false)
		}
	default:
		h.skip(v.Len * scalarSize[typ]) // Len ≤ limit, so no overflow
	}
	v.Size = h.pos - start
	return v
}

// digestTokens reads n token texts, as they are (untrimmed), into a tokenDigest.
func (h *hdr) digestTokens(n uint64) {
	d := newTokenDigest(int(n)) // n ≤ the header's limit
	for i := uint64(0); i < n && h.err == nil; i++ {
		l, ok := h.strLen(maxStringLen)
		if !ok {
			return
		}
		if uint64(cap(h.text)) < l {
			h.text = make([]byte, l)
		}
		h.read(h.text[:l])
		d.add(h.text[:l])
	}
	if h.err == nil {
		h.tokens = d
	}
}

// tensor reads one tensor info and returns it with its size in bytes.
func (h *hdr) tensor() (gguf.GGUFTensorInfo, uint64, error) {
	var ti gguf.GGUFTensorInfo
	ti.StartOffset = h.pos
	ti.Name = h.str(maxKeyLen, true)
	ti.NDimensions = h.u32()
	if h.err != nil {
		return ti, 0, h.err
	}
	if ti.NDimensions == 0 || ti.NDimensions > gguf.GGMLMaxDims {
		return ti, 0, fmt.Errorf("invalid dimension count %d", ti.NDimensions)
	}
	ti.Dimensions = make([]uint64, ti.NDimensions)
	elems := uint64(1)
	for i := range ti.Dimensions {
		d := h.u64()
		if h.err != nil {
			return ti, 0, h.err
		}
		hi, lo := bits.Mul64(elems, d)
		if hi != 0 || lo > maxTensorBytes {
			return ti, 0, errors.New("absurd tensor shape")
		}
		ti.Dimensions[i], elems = d, lo
	}
	ti.Type = gguf.GGMLType(h.u32())
	ti.Offset = h.u64()
	if h.err != nil {
		return ti, 0, h.err
	}
	tt, ok := ti.Type.Trait()
	if !ok || tt.BlockSize == 0 {
		return ti, 0, fmt.Errorf("unsupported tensor type %d", uint32(ti.Type))
	}
	hi, n := bits.Mul64(elems, tt.TypeSize)
	if hi != 0 || n > maxTensorBytes {
		return ti, 0, errors.New("absurd tensor size")
	}
	return ti, n, nil
}
