package config

import (
	"maps"
	"slices"
)

// Clone is a copy of c that shares no memory with it: a change made to the copy (a model's
// section, a list, a variant) leaves c as it was. Service.Edit hands one to each change.
func (c Config) Clone() Config {
	out := c
	out.ModelDirs = slices.Clone(c.ModelDirs)
	out.APIKeys = slices.Clone(c.APIKeys)
	out.AllowedHosts = slices.Clone(c.AllowedHosts)
	out.CORSOrigins = slices.Clone(c.CORSOrigins)
	out.DeviceMemoryLimit = maps.Clone(c.DeviceMemoryLimit)
	out.Peers = clonePeers(c.Peers)
	out.Defaults.GPULayers = clonePtr(c.Defaults.GPULayers)
	out.Defaults.Args = slices.Clone(c.Defaults.Args)
	out.Workers = cloneWorkers(c.Workers)
	if c.Models != nil {
		out.Models = make(map[string]Model, len(c.Models))
		for id, m := range c.Models {
			out.Models[id] = m.clone()
		}
	}
	return out
}

// clone is a copy of m, its variants included, that shares no memory with it.
func (m Model) clone() Model {
	out := m
	out.Aliases = slices.Clone(m.Aliases)
	out.Tags = slices.Clone(m.Tags)
	out.Args = slices.Clone(m.Args)
	out.GPULayers = clonePtr(m.GPULayers)
	out.IdleSleep = clonePtr(m.IdleSleep)
	out.IdleUnload = clonePtr(m.IdleUnload)
	out.DraftGPULayers = clonePtr(m.DraftGPULayers)
	out.StripParams = slices.Clone(m.StripParams)
	out.Workers = slices.Clone(m.Workers)
	out.SetParams = cloneParams(m.SetParams)
	out.DefaultParams = cloneParams(m.DefaultParams)
	if m.Variants != nil {
		out.Variants = make(map[string]Model, len(m.Variants))
		for name, v := range m.Variants {
			out.Variants[name] = v.clone()
		}
	}
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
