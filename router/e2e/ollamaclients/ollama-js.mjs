// Ollama's official JavaScript client (npm "ollama"), unchanged, against a running Llamatray.
// Usage: node ollama-js.mjs BASE_URL MODEL (see lib.mjs for the other settings). It prints one
// JSON line, {"client", "version", "ok", "steps"}, and exits 1 if any step failed.
import { readFileSync } from "node:fs";
import { Ollama } from "ollama";
import { Run, check, checkFinal, checkVectors, isTime, listed, notFound, options, prompt, settings } from "./lib.mjs";

const s = settings();
const version = JSON.parse(readFileSync(new URL("./node_modules/ollama/package.json", import.meta.url))).version;
const run = new Run("ollama-js", version);
const ollama = new Ollama({ host: s.base });
const messages = [{ role: "user", content: prompt }];

await run.step("version", async () => {
  const r = await ollama.version();
  check(typeof r.version === "string" && r.version !== "", "version", r);
  return { server: r.version };
});

await run.step("list", async () => {
  const { models } = await ollama.list();
  const names = models.map((m) => m.name);
  for (const want of [s.model, s.embedModel]) check(names.includes(listed(want)), `${listed(want)} listed`, names);
  for (const m of models) {
    check(m.model === m.name && /^[0-9a-f]{64}$/.test(m.digest) && m.size > 0, "name, model, digest and size", m);
    check(isTime(m.modified_at) && m.details?.format === "gguf", "modified_at and details", m);
  }
  return { names };
});

await run.step("show", async () => {
  const r = await ollama.show({ model: s.model });
  check(r.capabilities?.includes("completion"), "capabilities", r.capabilities);
  check(r.details?.format === "gguf" && typeof r.model_info === "object", "details and model_info", r);
  check(typeof r.modelfile === "string" && typeof r.template === "string", "modelfile and template", r);
  return { capabilities: r.capabilities, family: r.details.family };
});

await run.step("chat", async () => {
  const r = await ollama.chat({ model: s.model, messages, options, stream: false });
  checkFinal(r, s.model);
  check(r.message?.role === "assistant" && typeof r.message.content === "string", "message", r.message);
  return { eval_count: r.eval_count, done_reason: r.done_reason };
});

await run.step("chat_stream", async () => {
  let n = 0;
  let text = "";
  let last;
  for await (const part of await ollama.chat({ model: s.model, messages, options, stream: true })) {
    n++;
    check(part.message?.role === "assistant", "message role", part.message);
    text += part.message.content;
    last = part;
  }
  checkFinal(last, s.model);
  check(n >= 2 && text !== "", "a stream of text, then the final object", { n, text });
  return { objects: n, eval_count: last.eval_count };
});

await run.step("generate", async () => {
  const r = await ollama.generate({ model: s.model, prompt, options, stream: false });
  checkFinal(r, s.model);
  check(typeof r.response === "string", "response", r.response);
  return { eval_count: r.eval_count };
});

await run.step("generate_stream", async () => {
  let n = 0;
  let text = "";
  let last;
  for await (const part of await ollama.generate({ model: s.model, prompt, options, stream: true })) {
    n++;
    text += part.response;
    last = part;
  }
  checkFinal(last, s.model);
  check(n >= 2 && text !== "", "a stream of text, then the final object", { n, text });
  return { objects: n };
});

await run.step("embed", async () => {
  const r = await ollama.embed({ model: s.embedModel, input: ["hello", "world"] });
  check(r.model === s.embedModel, "model", r.model);
  const dims = checkVectors(r.embeddings, 2);
  const one = await ollama.embed({ model: s.embedModel, input: "hello" });
  checkVectors(one.embeddings, 1);
  check(one.embeddings[0].length === dims, "the same size for one input", one.embeddings[0].length);
  return { dims };
});

await run.step("embeddings", async () => {
  const r = await ollama.embeddings({ model: s.embedModel, prompt: "hello" });
  checkVectors([r.embedding], 1);
  return { dims: r.embedding.length };
});

await run.step("ps", async () => {
  const { models } = await ollama.ps();
  const m = models.find((m) => m.name === listed(s.model));
  check(m, `${listed(s.model)} running`, models.map((m) => m.name));
  check(m.size > 0 && typeof m.size_vram === "number" && isTime(m.expires_at), "size, size_vram and expires_at", m);
  return { running: models.map((m) => m.name) };
});

const isPullError = (e) => {
  check(e.name === "ResponseError" && e.status_code >= 400, "a ResponseError with an error status", { name: e.name, status: e.status_code });
  check(e.message !== "", "a message", e.message);
};
await run.raises("pull_unknown", () => ollama.pull({ model: s.unknownPull }), isPullError);
await run.raises("pull_unknown_stream", async () => {
  for await (const _ of await ollama.pull({ model: s.unknownPull, stream: true }));
}, isPullError);

if (s.pullModel) {
  await run.step("pull", async () => {
    const statuses = [];
    for await (const p of await ollama.pull({ model: s.pullModel, stream: true })) statuses.push(p.status);
    check(statuses.at(-1) === "success", "the last status", statuses);
    const again = await ollama.pull({ model: s.pullModel });
    check(again.status === "success", "a pull of what is there", again);
    const shown = await ollama.show({ model: s.pullModel });
    check(shown.details?.format === "gguf", "shown by the name it was pulled by", shown);
    return { statuses: [...new Set(statuses)] };
  });
  await run.step("delete", async () => {
    const r = await ollama.delete({ model: s.pullModel });
    check(r.status === "success", "status", r);
  });
}

// A model the server does not have: every call raises Ollama's 404.
const unknown = "x";
const isNotFound = (endpoint) => (e) => {
  check(e.name === "ResponseError", "a ResponseError", e.name);
  check(notFound(unknown, endpoint).includes(e.message) && e.error === e.message, "the message", e.message);
  check(e.status_code === 404, "status_code", e.status_code);
};
await run.raises("unknown_chat", () => ollama.chat({ model: unknown, messages, stream: false }), isNotFound("chat"));
await run.raises("unknown_chat_stream", async () => {
  for await (const _ of await ollama.chat({ model: unknown, messages, stream: true }));
}, isNotFound("chat"));
await run.raises("unknown_generate", () => ollama.generate({ model: unknown, prompt }), isNotFound("generate"));
await run.raises("unknown_embed", () => ollama.embed({ model: unknown, input: "hello" }), isNotFound("embed"));
await run.raises("unknown_show", () => ollama.show({ model: unknown }), isNotFound("show"));

run.finish();
