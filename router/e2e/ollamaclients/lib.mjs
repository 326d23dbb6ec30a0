// What the client scripts share: their settings, steps that record what they saw, and the one
// JSON line they print. Nothing here talks to the server: each script does so through its client.

// settings reads the base URL and the model names: argv (BASE MODEL) first, else the environment.
export function settings() {
  const [base, model] = process.argv.slice(2);
  const s = {
    base: base || process.env.OLLAMA_HOST || "http://127.0.0.1:11434",
    model: model || process.env.OLLAMA_MODEL || "",
    // A model that embeds (Llamatray runs it with --embeddings); the chat model by default.
    embedModel: process.env.OLLAMA_EMBED_MODEL || "",
    // A name no Hub has: its pull must fail.
    unknownPull: process.env.OLLAMA_UNKNOWN_PULL || "hf.co/llamatray-e2e/no-such-model-GGUF:Q4_K_M",
    // A name that pulls (optional): pulled, shown by that name, then deleted.
    pullModel: process.env.OLLAMA_PULL_MODEL || "",
  };
  if (!s.model) {
    console.error("usage: node SCRIPT BASE_URL MODEL (or OLLAMA_HOST and OLLAMA_MODEL)");
    process.exit(2);
  }
  s.embedModel ||= s.model;
  return s;
}

// The prompt and options every generation step uses: short, and the same each run.
export const prompt = "Say something.";
export const options = { num_predict: 8, seed: 1, temperature: 0 };

// The messages Ollama answers for a model it does not have, by endpoint, as the clients must raise
// them: 'model "x" not found, try pulling it first' everywhere, and Ollama 0.33's own wording where
// it differs (router/testbed/testdata/ollama/errors.json): "model 'x' not found" for chat and
// generate, "model 'x:latest' not found" for show.
export function notFound(name, endpoint) {
  const m = [`model "${name}" not found, try pulling it first`];
  if (endpoint === "chat" || endpoint === "generate") m.push(`model '${name}' not found`);
  if (endpoint === "show") m.push(`model '${listed(name)}' not found`);
  return m;
}

export class Run {
  constructor(client, version) {
    this.out = { client, version, ok: true, steps: {} };
  }

  // step runs fn and records what it returns, or its error; a failed step fails the run.
  // Each step says on stderr when it starts and how it ended, so a step that hangs is named.
  async step(name, fn) {
    const t0 = Date.now();
    console.error(`${this.out.client}: ${name}`);
    try {
      const v = await fn();
      this.out.steps[name] = v === undefined ? { ok: true } : { ok: true, ...v };
    } catch (e) {
      this.out.ok = false;
      this.out.steps[name] = { ok: false, error: String(e?.stack || e) };
    }
    console.error(`${this.out.client}: ${name} ${this.out.steps[name].ok ? "ok" : "FAILED"} (${Date.now() - t0} ms)`);
  }

  // raises runs fn, which must throw; check(error) then says whether it is the right error.
  async raises(name, fn, check) {
    await this.step(name, async () => {
      let err;
      try {
        await fn();
      } catch (e) {
        err = e;
      }
      if (!err) throw new Error("no error was raised");
      check(err);
      return { raised: err.name, message: err.message, status: err.status_code ?? err.status };
    });
  }

  // finish prints the result line and exits non-zero if any step failed.
  finish() {
    process.stdout.write(JSON.stringify(this.out) + "\n");
    process.exit(this.out.ok ? 0 : 1);
  }
}

export function check(cond, what, got) {
  if (!cond) throw new Error(got === undefined ? what : `${what}: got ${JSON.stringify(got)}`);
}

// listed is how Ollama lists a name: with ":latest" when it has no tag.
export function listed(name) {
  const last = name.slice(name.lastIndexOf("/") + 1);
  return last.includes(":") ? name : `${name}:latest`;
}

export function isTime(s) {
  return typeof s === "string" && !Number.isNaN(Date.parse(s));
}

// checkFinal checks the last object of a chat or generate answer: done, why, and its counts.
export function checkFinal(r, model) {
  check(r.model === model, "model", r.model);
  check(r.done === true, "done", r.done);
  check(["stop", "length"].includes(r.done_reason), "done_reason", r.done_reason);
  check(r.eval_count >= 1, "eval_count", r.eval_count);
  check(r.total_duration > 0, "total_duration", r.total_duration);
  check(isTime(r.created_at), "created_at", r.created_at);
}

// checkVectors checks n embeddings of one non-zero size, all finite numbers.
export function checkVectors(vs, n) {
  check(Array.isArray(vs) && vs.length === n, `${n} embeddings`, vs?.length);
  for (const v of vs) {
    check(Array.isArray(v) && v.length > 0 && v.length === vs[0].length, "embedding size", v?.length);
    check(v.every(Number.isFinite), "embedding values are numbers");
  }
  return vs[0].length;
}
