package locate

import (
	"context"
	"os"
	"slices"
	"testing"
)

const helpSample = `----- common params -----

-h,    --help, --usage                  print usage and exit
--version                               show version and build info
-t,    --threads N                      number of CPU threads to use during generation (default: <num_cpus>)
                                        (env: LLAMA_ARG_THREADS)
--cpu-strict <0|1>                      use strict CPU placement (default: 0)
-fa,   --flash-attn [on|off|auto]       set Flash Attention use ('on', 'off', or 'auto', default: 'auto')
--mmap, --no-mmap                       whether to memory-map model (default: enabled)
-ctk,  --cache-type-k TYPE              KV cache data type for K
                                        allowed values: f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1
`

func TestParseFlags(t *testing.T) {
	got := ParseFlags(helpSample)
	want := []string{"-h", "--help", "--usage", "--version", "-t", "--threads", "--cpu-strict", "-fa", "--flash-attn", "--mmap", "--no-mmap", "-ctk", "--cache-type-k"}
	if !slices.Equal(got, want) {
		t.Fatalf("flags %q, want %q", got, want)
	}
}

// The real llama-server's --help, when LLAMA_SERVER names one.
func TestFlagsOfRealLlamaServer(t *testing.T) {
	bin := os.Getenv("LLAMA_SERVER")
	if bin == "" {
		t.Skip("LLAMA_SERVER is not set")
	}
	flags, err := Flags(context.Background(), bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"-c", "--ctx-size", "-ctk", "--cache-type-v", "-np", "--jinja", "-fa", "--port"} {
		if !slices.Contains(flags, f) {
			t.Errorf("%s missing from %d flags", f, len(flags))
		}
	}
	t.Logf("%d flags", len(flags))
}
