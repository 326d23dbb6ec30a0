package main

import (
	"bufio"
	"encoding/json"
	"os"
	"time"
)

// simKVLayerMiB is the KV cache of one layer of the simulated models at the sim's 4096-token
// context: keys and values of 4096 f16 values (ggufwrite's default width, as many KV heads as
// heads) per token.
const simKVLayerMiB = 2 * 4096 * 4096 * 2 >> 20

// simKnobs is the sidecar of a simulated model of size bytes and blocks layers: the fake holds its
// whole weights and KV cache as llama.cpp does, split by the layers it offloads (-ngl, else what
// --fit leaves within the device share), the rest in RAM; a load takes loadPerGB per GB; every
// fake records its events in record.
func simKnobs(size int64, blocks int, loadPerGB time.Duration, record string) map[string]any {
	return map[string]any{
		"sim_model_mib": size >> 20, "sim_kv_mib": blocks * simKVLayerMiB, "sim_layers": blocks,
		"load_time": (loadPerGB * time.Duration(size>>30)).String(), "tokens": 4, "record": record,
	}
}

// countFits reads the fakes' record: how many loads (ready) there were, and how many of them --fit
// offloaded fewer layers to keep each device's --fit-target margin free.
func countFits(record string) (fitted, loads int) {
	f, err := os.Open(record)
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var ev struct {
			Event string `json:"event"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		switch ev.Event {
		case "fit":
			fitted++
		case "ready":
			loads++
		}
	}
	return fitted, loads
}
