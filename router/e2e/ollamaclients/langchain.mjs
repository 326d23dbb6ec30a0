// LangChain's Ollama integration (npm "@langchain/ollama": ChatOllama, Ollama, OllamaEmbeddings),
// unchanged, against a running Llamatray. Usage: node langchain.mjs BASE_URL MODEL (see lib.mjs for
// the other settings). It prints one JSON line, {"client", "version", "ok", "steps"}, and exits 1
// if any step failed. LangChain has no call of its own for /api/show and /api/ps: those steps use
// the Ollama client ChatOllama holds (chat.client).
import { readFileSync } from "node:fs";
import { HumanMessage } from "@langchain/core/messages";
import { ChatOllama, Ollama, OllamaEmbeddings } from "@langchain/ollama";
import { Run, check, checkVectors, isTime, listed, notFound, options, prompt, settings } from "./lib.mjs";

const s = settings();
const pkg = (name) => JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url))).version;
const run = new Run("langchain", `@langchain/ollama ${pkg("@langchain/ollama")}, @langchain/core ${pkg("@langchain/core")}, ollama ${pkg("ollama")}`);
const fields = { baseUrl: s.base, numPredict: options.num_predict, seed: options.seed, temperature: options.temperature };
const chat = new ChatOllama({ model: s.model, ...fields });
const messages = [new HumanMessage(prompt)];

// checkAnswer checks ChatOllama's last message: text, Ollama's final metadata, token counts.
function checkAnswer(m) {
  check(typeof m.content === "string", "content", m.content);
  const md = m.response_metadata;
  check(md?.model === s.model && md.done === true && ["stop", "length"].includes(md.done_reason), "response_metadata", md);
  check(isTime(md.created_at), "created_at", md.created_at);
  check(m.usage_metadata?.output_tokens >= 1 && m.usage_metadata.input_tokens >= 1, "usage_metadata", m.usage_metadata);
}

await run.step("list", async () => {
  check(await chat.checkModelExistsOnMachine(s.model), `${s.model} on the machine`);
  check(await chat.checkModelExistsOnMachine(listed(s.model)), `${listed(s.model)} on the machine`);
  check(!(await chat.checkModelExistsOnMachine("x")), "x is not on the machine");
});

await run.step("chat", async () => {
  const m = await chat.invoke(messages);
  checkAnswer(m);
  return { output_tokens: m.usage_metadata.output_tokens, done_reason: m.response_metadata.done_reason };
});

await run.step("chat_check_or_pull", async () => {
  // The model is there: it is listed, not pulled, and answers.
  const m = await new ChatOllama({ model: s.model, checkOrPullModel: true, ...fields }).invoke(messages);
  checkAnswer(m);
});

await run.step("chat_stream", async () => {
  let n = 0;
  let all;
  for await (const c of await chat.stream(messages)) {
    n++;
    all = all ? all.concat(c) : c;
  }
  check(n >= 2 && all.content !== "", "a stream of text", { n, content: all?.content });
  checkAnswer(all);
  return { chunks: n };
});

const llm = new Ollama({ model: s.model, ...fields });
await run.step("generate", async () => {
  const text = await llm.invoke(prompt);
  check(typeof text === "string" && text !== "", "text", text);
  const r = await llm.generate([prompt, prompt]);
  check(r.generations.length === 2 && r.generations.every((g) => g[0].text !== ""), "two generations", r.generations);
});

await run.step("generate_stream", async () => {
  let n = 0;
  let text = "";
  for await (const c of await llm.stream(prompt)) {
    n++;
    text += c;
  }
  check(n >= 2 && text !== "", "a stream of text", { n, text });
  return { chunks: n };
});

const embeddings = new OllamaEmbeddings({ model: s.embedModel, baseUrl: s.base });
await run.step("embed", async () => {
  const dims = checkVectors(await embeddings.embedDocuments(["hello", "world"]), 2);
  const q = await embeddings.embedQuery("hello");
  check(checkVectors([q], 1) === dims, "the same size for a query", q.length);
  return { dims };
});

await run.step("show", async () => {
  const r = await chat.client.show({ model: s.model });
  check(r.capabilities?.includes("completion") && r.details?.format === "gguf", "capabilities and details", r);
});

await run.step("ps", async () => {
  const { models } = await chat.client.ps();
  check(models.some((m) => m.name === listed(s.model)), `${listed(s.model)} running`, models.map((m) => m.name));
});

const isPullError = (e) => {
  check(e.name === "ResponseError" && e.status_code >= 400 && e.message !== "", "a ResponseError with an error status", { name: e.name, status: e.status_code });
};
await run.raises("pull_unknown", () => chat.pull(s.unknownPull), isPullError);
await run.raises("pull_unknown_no_stream", () => chat.pull(s.unknownPull, { stream: false }), isPullError);

if (s.pullModel) {
  // LangChain's own pull-then-chat: the model is not listed under that name, so it is pulled first.
  await run.step("chat_check_or_pull_new", async () => {
    const log = console.log;
    console.log = () => {}; // checkOrPullModel logs the pull's progress lines to stdout
    let m;
    try {
      m = await new ChatOllama({ model: s.pullModel, checkOrPullModel: true, ...fields }).invoke(messages);
    } finally {
      console.log = log;
    }
    check(typeof m.content === "string" && m.response_metadata?.done === true, "an answer from the pulled model", m);
    check(m.response_metadata.model === s.pullModel, "model", m.response_metadata.model);
  });
  await run.step("delete", async () => {
    await chat.client.delete({ model: s.pullModel });
  });
}

// A model the server does not have: every call raises Ollama's 404. LangChain's retries read an
// error's status or statusCode, not the status_code of the Ollama client's ResponseError, so the
// calls that go through them (Ollama, OllamaEmbeddings) would retry a 404 six times, backing off
// for a minute, against Ollama as here: those clients get maxRetries 0.
const unknown = "x";
const once = { maxRetries: 0 };
const isNotFound = (endpoint) => (e) => {
  check(notFound(unknown, endpoint).includes(e.message), "the message", e.message);
  check(e.status_code === 404, "status_code", e.status_code);
};
await run.raises("unknown_chat", () => new ChatOllama({ model: unknown, ...fields }).invoke(messages), isNotFound("chat"));
await run.raises("unknown_chat_stream", async () => {
  for await (const _ of await new ChatOllama({ model: unknown, ...fields }).stream(messages));
}, isNotFound("chat"));
await run.raises("unknown_generate", () => new Ollama({ model: unknown, ...fields, ...once }).invoke(prompt), isNotFound("generate"));
await run.raises("unknown_embed", () => new OllamaEmbeddings({ model: unknown, baseUrl: s.base, ...once }).embedQuery("hello"), isNotFound("embed"));

run.finish();
