//go:build !darwin

package mem

var unifiedMemory = false
