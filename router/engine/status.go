package engine

import "sort"

// Models snapshots every model of the catalog, sorted by ID.
func (e *Engine) Models() []ModelStatus {
	e.mu.Lock()
	out := make([]ModelStatus, 0, len(e.models))
	for _, m := range e.models {
		out = append(out, e.status(m))
	}
	e.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Model snapshots one model.
func (e *Engine) Model(name string) (ModelStatus, error) {
	id, err := e.Resolve(name)
	if err != nil {
		return ModelStatus{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.models[id]
	if m == nil {
		return ModelStatus{}, &UnknownModelError{Name: name}
	}
	return e.status(m), nil
}

// Logs returns the tail of the model's child output (the last child's, once it exited).
func (e *Engine) Logs(name string) []string {
	id, err := e.Resolve(name)
	if err != nil {
		return nil
	}
	e.mu.Lock()
	m := e.models[id]
	if m == nil {
		e.mu.Unlock()
		return nil
	}
	ch, tail := m.child, append([]string(nil), m.logTail...)
	e.mu.Unlock()
	if ch != nil {
		return ch.Logs()
	}
	return tail
}

// Budget reports the memory budget and how much of it models hold.
func (e *Engine) Budget() Budget {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.room()
	b := Budget{
		Limit:           e.shown(r.Budget),
		Configured:      e.o.MemoryLimit > 0,
		ConfiguredLimit: e.o.MemoryLimit,
		Reserve:         e.o.Reserve,
		SystemTotal:     e.sys.Total,
		SystemAvailable: e.sys.Available,
		MaxLoaded:       e.o.MaxLoaded,
	}
	for i, g := range e.gpus() {
		b.Devices = append(b.Devices, DeviceBudget{Name: deviceName(g, i), Description: g.Name, Total: g.Total, Limit: r.Budget.GPU[i], Ceiling: r.Ceiling.GPU[i]})
	}
	for _, m := range e.models {
		if m.state.Running() {
			b.Used += e.shown(m.held)
			b.Measured += e.shown(m.measured)
			b.Loaded++
			for i := range b.Devices {
				b.Devices[i].Used += m.held.GPU[i]
				b.Devices[i].Measured += m.measured.GPU[i]
			}
		}
	}
	b.Free = max(b.Limit-b.Used, 0)
	return b
}
