package cli

import "runtime"

// RouterProcs is how many threads may run Llamatray's Go code at once (GOMAXPROCS) on a machine with
// numCPU logical CPUs: half of them, at least 1, at most 4. The router only moves bytes between
// sockets; the cores belong to llama-server's inference threads, and with a P per core every
// request's wake-ups spin idle Go threads up on the other cores and take cycles from inference. On
// 2 cores (`make bench`, 4 runs): at 8 clients throughput rose from 0.81-0.85× of llama-server called
// directly to 0.85-0.94×, a streamed request at 1 client cost the router 23% less CPU; the price was
// +0.1 to +0.4 ms at 1 client for JSON answers. Four threads still proxy far more requests than
// any local model answers.
func RouterProcs(numCPU int) int {
	return min(max(numCPU/2, 1), 4)
}

// setProcs applies RouterProcs unless the user chose GOMAXPROCS in the environment.
func setProcs(getenv func(string) string) {
	if getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(RouterProcs(runtime.NumCPU()))
	}
}
