package mem

import "runtime"

// On Apple silicon the GPU uses system RAM.
var unifiedMemory = runtime.GOARCH == "arm64"
