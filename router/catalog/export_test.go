package catalog

// Terms is the estimate of a model file split into llama.cpp's buffers, for checking it against
// what llama-server logs and holds (the tests, against a real llama-server too).
type Terms struct {
	Weights  int64 // "model buffer size"
	KV       int64 // "KV buffer size" plus "RS buffer size"
	Output   int64 // "output buffer size"
	Reserved int64 // "compute buffer size"
	Compute  int64 // the part of Reserved a first full batch touches
	Host     int64 // the process and the vocabulary
	Total    int64 // what the estimate counts: all but Reserved
}

// FileTerms reads the header of the single-file model at path and sizes it for p.
func FileTerms(path string, p EstimateParams) (Terms, error) {
	h, err := parseHeader(path, []string{path})
	if err != nil {
		return Terms{}, err
	}
	t, err := modelTerms(h, p, contextFor(h, p))
	if err != nil {
		return Terms{}, err
	}
	return Terms{Weights: t.weights, KV: t.kv, Output: t.output, Reserved: t.reserved, Compute: t.compute, Host: t.host, Total: t.total()}, nil
}
