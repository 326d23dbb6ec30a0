package ggufwrite

// Projector returns a small, sparse CLIP vision projector (mmproj) of the given embedding width:
// a real header llama.cpp's clip loader reads, with zero-filled tensors.
func Projector(width int) *File {
	w := uint64(width)
	f := &File{Sparse: true, KVs: []KV{
		{Key: "general.architecture", Value: "clip"},
		{Key: "general.type", Value: "mmproj"},
		{Key: "general.name", Value: "test projector"},
		{Key: "general.file_type", Value: uint32(1)},
		{Key: "clip.has_vision_encoder", Value: true},
		{Key: "clip.projector_type", Value: "mlp"},
		{Key: "clip.vision.image_size", Value: uint32(224)},
		{Key: "clip.vision.patch_size", Value: uint32(14)},
		{Key: "clip.vision.embedding_length", Value: uint32(width)},
		{Key: "clip.vision.feed_forward_length", Value: uint32(2 * width)},
		{Key: "clip.vision.block_count", Value: uint32(2)},
		{Key: "clip.vision.attention.head_count", Value: uint32(4)},
		{Key: "clip.vision.attention.layer_norm_epsilon", Value: float32(1e-5)},
		{Key: "clip.vision.projection_dim", Value: uint32(64)},
	}}
	add := func(name string, shape ...uint64) {
		f.Tensors = append(f.Tensors, Tensor{Name: name, Shape: shape, Type: GGMLTypeF16})
	}
	add("v.patch_embd.weight", 14, 14, 3, w)
	add("v.position_embd.weight", w, 257)
	for _, b := range []string{"0", "1"} {
		for _, n := range []string{"attn_q", "attn_k", "attn_v", "attn_out"} {
			add("v.blk."+b+"."+n+".weight", w, w)
		}
		add("v.blk."+b+".ffn_up.weight", w, 2*w)
		add("v.blk."+b+".ffn_down.weight", 2*w, w)
	}
	add("mm.0.weight", w, 64)
	add("mm.2.weight", 64, 64)
	return f
}
