package engine

// get is the footprint learned under key, for the tests.
func (f *footprints) get(key string) footprint {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[key].clone()
}
