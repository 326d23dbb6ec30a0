package catalog

import "fmt"

// EstimateWith estimates the memory model id needs when run with p, from the headers the last scan
// read (no file is opened): what a settings editor shows before the settings are saved.
func (c *Catalog) EstimateWith(id string, p EstimateParams) (Estimate, error) {
	m, ok := c.Lookup(id)
	if !ok {
		return Estimate{}, fmt.Errorf("model %q is not in the catalog", id)
	}
	c.mu.Lock()
	r := c.cache[m.Path]
	var proj *cached
	if m.Mmproj != "" {
		proj = c.cache[m.Mmproj]
	}
	c.mu.Unlock()
	if r == nil || r.h == nil {
		return Estimate{}, fmt.Errorf("model %q: its header was not read", id)
	}
	var ph *header
	if proj != nil {
		ph = proj.h
	}
	return estimate(r.h, ph, p)
}
