package sched

// On returns a Mem of ram bytes of RAM and gpu[i] bytes on device i (the tables' shorthand).
func On(ram int64, gpu ...int64) Mem {
	m := Mem{RAM: ram}
	copy(m.GPU[:], gpu)
	return m
}
