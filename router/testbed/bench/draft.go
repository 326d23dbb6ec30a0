package main

// -draft: tokens per second of one model through Llamatray, without a draft and with two drafts,
// on the real llama-server; the Draft models section of docs/benchmarks.md.
//
// Random weights agree with nothing, so the bench builds a draft that agrees with its model on
// purpose: the target is 8 blocks wide of which the last 6 add nothing (their attention and
// feed-forward output projections are zero, so each leaves the residual stream as it found it),
// and the "agreeing" draft is the same first 2 blocks alone (the writer's weights depend on the
// seed and the tensor's place only). The target still does the work of 8 blocks per token, the
// draft that of 2, and a greedy draft is accepted every time: the case speculative decoding is
// for. The "disagreeing" draft has weights of its own and is almost never accepted: what a draft
// costs when it guesses wrong.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/llamatray/llamatray/router/config"
	"github.com/llamatray/llamatray/router/testbed/bench/harness"
	"github.com/llamatray/llamatray/router/testbed/ggufwrite"
	"github.com/llamatray/llamatray/router/wire"
)

const draftHeading = "## Draft models"

// Shape of the draft bench's models.
const (
	draftWidth     = 512
	draftBlocks    = 8 // the target's; the first draftKept do the work
	draftKept      = 2
	draftTokens    = 128 // max_tokens of every request
	draftPerRound  = 3   // requests per model per round
	draftMaxTokens = 8   // draft_max
)

// draftCase is one way of running the target.
type draftCase struct {
	id, desc string
	// measured
	tokens   int64
	elapsed  time.Duration
	perSec   []float64 // client-side tokens per second of each request
	activity wire.ActivityStats
}

// identityBlocks zeroes the output projections of blocks kept and later of f, so that they leave
// the residual stream unchanged.
func identityBlocks(f *ggufwrite.File, kept int) {
	for i, t := range f.Tensors {
		var b int
		var rest string
		if _, err := fmt.Sscanf(t.Name, "blk.%d.%s", &b, &rest); err != nil || b < kept {
			continue
		}
		if rest == "attn_output.weight" || rest == "ffn_down.weight" {
			n := 4 * int(t.Shape[0]*t.Shape[1])
			f.Tensors[i].Fill = func(w io.Writer) error {
				_, err := w.Write(make([]byte, n))
				return err
			}
		}
	}
}

func writeDraftModels(dir string) error {
	target := ggufwrite.Llama(ggufwrite.LlamaOptions{Width: draftWidth, Blocks: draftBlocks, Seed: 7, Name: "bench-target"})
	identityBlocks(target, draftKept)
	if err := ggufwrite.WriteFile(filepath.Join(dir, "bench-target.gguf"), target); err != nil {
		return err
	}
	if err := ggufwrite.WriteLlama(filepath.Join(dir, "bench-agree.gguf"), ggufwrite.LlamaOptions{Width: draftWidth, Blocks: draftKept, Seed: 7, Name: "bench-agree"}); err != nil {
		return err
	}
	return ggufwrite.WriteLlama(filepath.Join(dir, "bench-disagree.gguf"), ggufwrite.LlamaOptions{Width: draftWidth, Blocks: draftKept, Seed: 99, Name: "bench-disagree"})
}

// mainDraft runs -draft and returns the exit code.
func mainDraft(ctx context.Context, o options) int {
	return mainSection(ctx, o, draftHeading, runDraft)
}

// mainSection runs one section's bench, prints its text and, with -out, puts it in that file under
// heading; it returns the exit code.
func mainSection(ctx context.Context, o options, heading string, run func(context.Context, options) (string, error)) int {
	text, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	fmt.Print(text)
	if o.out != "" {
		if err := harness.ReplaceSection(o.out, heading, text); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		fmt.Fprintln(os.Stderr, "bench: wrote", o.out)
	}
	return 0
}

func runDraft(ctx context.Context, o options) (string, error) {
	machine := harness.Describe(ctx, o.llamaServer)
	loadStart := harness.LoadAvg()
	tmp, cleanup, err := workDir("llamatray-bench-draft-", o.keep)
	if err != nil {
		return "", err
	}
	defer cleanup()
	dir := filepath.Join(tmp, "models")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	progress("writing the models")
	if err := writeDraftModels(dir); err != nil {
		return "", err
	}
	cfg, err := harness.Config(dir, o.llamaServer)
	if err != nil {
		return "", err
	}
	cfg.Defaults.Args = append([]string{"-t", "1"}, strings.Fields(o.extraArgs)...)
	cfg.Models = map[string]config.Model{"bench-target": {Variants: map[string]config.Model{
		"agree":    {Draft: "bench-agree", DraftMax: draftMaxTokens},
		"disagree": {Draft: "bench-disagree", DraftMax: draftMaxTokens},
	}}}
	logf, err := os.Create(filepath.Join(tmp, "llamatray.log"))
	if err != nil {
		return "", err
	}
	defer logf.Close()
	svc, err := harness.StartService(ctx, cfg, slog.New(slog.NewTextHandler(logf, nil)), nil)
	if err != nil {
		return "", err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = svc.Stop(sctx)
	}()
	cases := []*draftCase{
		{id: "bench-target", desc: "no draft"},
		{id: "bench-target@agree", desc: "draft that agrees (its first 2 blocks)"},
		{id: "bench-target@disagree", desc: "draft that disagrees (2 blocks of other weights)"},
	}
	client := harness.NewClient(4)
	for _, c := range cases {
		progress("loading " + c.id)
		if err := svc.Engine().Load(ctx, c.id); err != nil {
			return "", fmt.Errorf("loading %s: %w", c.id, err)
		}
		if _, err := greedy(ctx, client, svc.ChatURL(), c.id); err != nil { // warm
			return "", err
		}
	}
	for round := range o.slices {
		progress(fmt.Sprintf("round %d of %d (load %s)", round+1, o.slices, harness.LoadAvg()))
		for k := range cases {
			c := cases[(k+round)%len(cases)] // each round starts with the next case
			for range draftPerRound {
				start := time.Now()
				n, err := greedy(ctx, client, svc.ChatURL(), c.id)
				if err != nil {
					return "", err
				}
				d := time.Since(start)
				c.tokens += n
				c.elapsed += d
				c.perSec = append(c.perSec, float64(n)/d.Seconds())
			}
		}
	}
	doc := svc.Activity()
	for _, c := range cases {
		for _, m := range doc.Models {
			if m.Model == c.id {
				c.activity = m.Total
			}
		}
	}
	args := ""
	if st, err := svc.Engine().Model("bench-target@agree"); err == nil {
		args = strings.ReplaceAll(strings.Join(st.Args, " "), dir+string(filepath.Separator), "")
	}
	return draftMarkdown(machine, loadStart+" → "+harness.LoadAvg(), args, o, cases), nil
}

// greedy streams one greedy chat of draftTokens tokens and returns the tokens it got.
func greedy(ctx context.Context, c *http.Client, url, model string) (int64, error) {
	body, _ := json.Marshal(map[string]any{
		"model": model, "stream": true, "max_tokens": draftTokens, "ignore_eos": true, "temperature": 0,
		"stream_options": map[string]any{"include_usage": true},
		"messages":       []map[string]string{{"role": "user", "content": harness.Prompt}},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", model, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte("data: [DONE]")) {
		return 0, fmt.Errorf("%s: %d %v %.300s", model, resp.StatusCode, err, b)
	}
	return draftTokens, nil // ignore_eos: every request makes max_tokens
}

// medianRate is the median of v, 0 for none.
func medianRate(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func draftMarkdown(machine harness.Machine, load, args string, o options, cases []*draftCase) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("%s\n\n", draftHeading)
	w("Speculative decoding with a draft model (`draft`, `draft_max` of a model's section): one model\n")
	w("through Llamatray without a draft and with two, on the real llama-server:\n\n")
	w("```sh\ngo run ./router/testbed/bench -draft -llama-server PATH -slices %d -out docs/benchmarks.md\n```\n\n", o.slices)
	w("The model: %d wide, %d blocks (F32, random weights, `-t 1`, ctx 2048), of which the last %d add nothing (their\n", draftWidth, draftBlocks, draftBlocks-draftKept)
	w("attention and feed-forward output projections are zero), so it computes what its first %d blocks\n", draftKept)
	w("compute while doing the work of %d per token. The **agreeing** draft is those %d blocks alone, which a\n", draftBlocks, draftKept)
	w("greedy draft's every token matches; the **disagreeing** draft has %d blocks of other weights. Each is a\n", draftKept)
	w("variant of the model (`[models.\"bench-target\".variants.\"agree\"] draft = \"bench-agree\"`, `draft_max = %d`).\n", draftMaxTokens)
	w("Requests: streamed, greedy (`temperature` 0), %d tokens (`ignore_eos`), one at a time, %d per model in\n", draftTokens, draftPerRound)
	w("each of %d rounds whose order rotates. Client = tokens over the request's wall time (median and whole run);\n", o.slices)
	w("llama-server = its own `predicted_per_second` as GET /api/activity sums it; acceptance = the draft's tokens\n")
	w("accepted over proposed, from the same timings (`draft_n_accepted`, `draft_n`).\n\n")
	w("Machine: %s. Load average %s.\n\n", machine, load)
	w("| model | client tokens/s (median) | client tokens/s (run) | llama-server tokens/s | draft acceptance | × no draft |\n")
	w("|---|---|---|---|---|---|\n")
	base := 0.0
	for i, c := range cases {
		run := float64(c.tokens) / c.elapsed.Seconds()
		if i == 0 {
			base = run
		}
		acc := "—"
		if c.activity.DraftTokens > 0 {
			acc = fmt.Sprintf("%.2f (%d of %d)", c.activity.DraftAcceptance, c.activity.DraftAccepted, c.activity.DraftTokens)
		}
		w("| %s | %.1f | %.1f | %.1f | %s | %.2f |\n", c.desc, medianRate(c.perSec), run, c.activity.TokensPerSecond, acc, run/base)
	}
	w("\nThe agreeing draft's child (files in the bench's model folder): `llama-server %s`.\n\n", args)
	w("How to read it: a step drafts up to `draft_max` tokens with the draft, one after the other, then the model\n")
	w("checks them all in one batch and keeps the accepted ones plus one of its own. The gain is bounded by how\n")
	w("much cheaper a draft token is than a model token (here the draft does 2 blocks of the model's 8, and both\n")
	w("share the one thread of `-t 1`) and by how cheap a batch of `draft_max`+1 tokens is against one: on a\n")
	w("CPU a batch costs more than one token, on a GPU nearly the same, where real pairs (a 0.5B draft for a\n")
	w("7B–32B model of the same family) are the usual case. A draft that disagrees costs its drafting and the\n")
	w("batch for one token per step: never configure one whose acceptance GET /api/activity shows near 0.\n")
	return b.String()
}
