"""Ollama's official Python client (Debian's python3-ollama), unchanged, against a running Llamatray.

Usage: python3 client.py BASE_URL MODEL (else $OLLAMA_HOST and $OLLAMA_MODEL); the other settings
are those of lib.mjs: $OLLAMA_EMBED_MODEL, $OLLAMA_UNKNOWN_PULL, $OLLAMA_PULL_MODEL. It prints one
JSON line, {"client", "version", "ok", "steps"}, and exits 1 if any step failed.
"""

import importlib.metadata
import json
import math
import os
import sys
import time
import traceback
from datetime import datetime

import ollama

base = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OLLAMA_HOST", "http://127.0.0.1:11434")
model = sys.argv[2] if len(sys.argv) > 2 else os.environ.get("OLLAMA_MODEL", "")
if not model:
    sys.exit("usage: python3 client.py BASE_URL MODEL (or OLLAMA_HOST and OLLAMA_MODEL)")
embed_model = os.environ.get("OLLAMA_EMBED_MODEL") or model
unknown_pull = os.environ.get("OLLAMA_UNKNOWN_PULL") or "hf.co/llamatray-e2e/no-such-model-GGUF:Q4_K_M"
pull_model = os.environ.get("OLLAMA_PULL_MODEL", "")

prompt = "Say something."
options = {"num_predict": 8, "seed": 1, "temperature": 0}
messages = [{"role": "user", "content": prompt}]

out = {
    "client": "ollama-python",
    "version": f"{importlib.metadata.version('ollama')} (Python {sys.version.split()[0]})",
    "ok": True,
    "steps": {},
}
client = ollama.Client(host=base)


def check(cond, what, got=None):
    if not cond:
        raise AssertionError(what if got is None else f"{what}: got {got!r}")


def step(name):
    """Runs the decorated function as a step: what it returns, or its error, is recorded."""

    def run(fn):
        t0 = time.monotonic()
        print(f"ollama-python: {name}", file=sys.stderr, flush=True)
        try:
            out["steps"][name] = {"ok": True, **(fn() or {})}
        except Exception:
            out["ok"] = False
            out["steps"][name] = {"ok": False, "error": traceback.format_exc()}
        state = "ok" if out["steps"][name]["ok"] else "FAILED"
        print(f"ollama-python: {name} {state} ({(time.monotonic() - t0) * 1000:.0f} ms)", file=sys.stderr, flush=True)
        return fn

    return run


def raises(name, fn, check_error):
    """A step whose call must raise; check_error(e) says whether it is the right error."""

    @step(name)
    def _():
        try:
            fn()
        except Exception as e:
            check_error(e)
            return {"raised": type(e).__name__, "message": str(getattr(e, "error", e)), "status": getattr(e, "status_code", None)}
        raise AssertionError("no error was raised")


def listed(name):
    return name if ":" in name.rsplit("/", 1)[-1] else name + ":latest"


def check_final(r):
    check(r.model == model, "model", r.model)
    check(r.done is True, "done", r.done)
    check(r.done_reason in ("stop", "length"), "done_reason", r.done_reason)
    check((r.eval_count or 0) >= 1, "eval_count", r.eval_count)
    check((r.total_duration or 0) > 0, "total_duration", r.total_duration)
    check(isinstance(datetime.fromisoformat(r.created_at.replace("Z", "+00:00")), datetime), "created_at", r.created_at)


def check_vectors(vs, n):
    vs = list(vs)
    check(len(vs) == n, f"{n} embeddings", len(vs))
    for v in vs:
        check(len(v) > 0 and len(v) == len(vs[0]), "embedding size", len(v))
        check(all(isinstance(x, float) and math.isfinite(x) for x in v), "embedding values are numbers")
    return len(vs[0])


@step("list")
def _():
    models = client.list().models
    names = [m.model for m in models]
    for want in (model, embed_model):
        check(listed(want) in names, f"{listed(want)} listed", names)
    for m in models:
        check(len(m.digest) == 64 and m.size > 0 and m.modified_at is not None, "digest, size and modified_at", m)
        check(m.details is not None and m.details.format == "gguf", "details", m.details)
    return {"names": names}


@step("show")
def _():
    r = client.show(model)
    check("completion" in (r.capabilities or []), "capabilities", r.capabilities)
    check(r.details.format == "gguf" and isinstance(r.modelinfo, dict), "details and model_info", r)
    check(isinstance(r.modelfile, str) and isinstance(r.template, str), "modelfile and template", r)
    return {"capabilities": list(r.capabilities), "family": r.details.family}


@step("chat")
def _():
    r = client.chat(model=model, messages=messages, options=options, stream=False)
    check_final(r)
    check(r.message.role == "assistant" and isinstance(r.message.content, str), "message", r.message)
    return {"eval_count": r.eval_count, "done_reason": r.done_reason}


@step("chat_stream")
def _():
    parts = list(client.chat(model=model, messages=messages, options=options, stream=True))
    text = "".join(p.message.content or "" for p in parts)
    check(all(p.message.role == "assistant" for p in parts), "message roles")
    check_final(parts[-1])
    check(len(parts) >= 2 and text != "", "a stream of text, then the final object", (len(parts), text))
    return {"objects": len(parts)}


@step("generate")
def _():
    r = client.generate(model=model, prompt=prompt, options=options, stream=False)
    check_final(r)
    check(isinstance(r.response, str), "response", r.response)
    return {"eval_count": r.eval_count}


@step("generate_stream")
def _():
    parts = list(client.generate(model=model, prompt=prompt, options=options, stream=True))
    text = "".join(p.response or "" for p in parts)
    check_final(parts[-1])
    check(len(parts) >= 2 and text != "", "a stream of text, then the final object", (len(parts), text))
    return {"objects": len(parts)}


@step("embed")
def _():
    r = client.embed(model=embed_model, input=["hello", "world"])
    check(r.model == embed_model, "model", r.model)
    dims = check_vectors(r.embeddings, 2)
    one = client.embed(model=embed_model, input="hello")
    check(check_vectors(one.embeddings, 1) == dims, "the same size for one input")
    return {"dims": dims}


@step("embeddings")
def _():
    r = client.embeddings(model=embed_model, prompt="hello")
    return {"dims": check_vectors([r.embedding], 1)}


@step("ps")
def _():
    models = client.ps().models
    running = [m.name for m in models]
    m = next((m for m in models if m.name == listed(model)), None)
    check(m is not None, f"{listed(model)} running", running)
    check(m.model == m.name and m.size > 0 and m.size_vram is not None and m.expires_at is not None, "model, size, size_vram and expires_at", m)
    return {"running": running}


def is_pull_error(e):
    check(isinstance(e, ollama.ResponseError) and e.status_code >= 400 and e.error, "a ResponseError with an error status", repr(e))


raises("pull_unknown", lambda: client.pull(unknown_pull), is_pull_error)
raises("pull_unknown_stream", lambda: list(client.pull(unknown_pull, stream=True)), is_pull_error)

if pull_model:

    @step("pull")
    def _():
        statuses = [p.status for p in client.pull(pull_model, stream=True)]
        check(statuses[-1:] == ["success"], "the last status", statuses)
        check(client.pull(pull_model).status == "success", "a pull of what is there")
        check(client.show(pull_model).details.format == "gguf", "shown by the name it was pulled by")
        return {"statuses": list(dict.fromkeys(statuses))}

    @step("delete")
    def _():
        check(client.delete(pull_model).status == "success", "status")


# A model the server does not have: every call raises Ollama's 404, with Ollama's message for that
# endpoint (see notFound in lib.mjs).
unknown = "x"


def not_found(endpoint):
    m = [f'model "{unknown}" not found, try pulling it first']
    if endpoint in ("chat", "generate"):
        m.append(f"model '{unknown}' not found")
    if endpoint == "show":
        m.append(f"model '{listed(unknown)}' not found")
    return m


def is_not_found(endpoint):
    def check_error(e):
        check(isinstance(e, ollama.ResponseError), "a ResponseError", repr(e))
        check(e.error in not_found(endpoint), "the message", e.error)
        check(e.status_code == 404, "status_code", e.status_code)

    return check_error


raises("unknown_chat", lambda: client.chat(model=unknown, messages=messages), is_not_found("chat"))
raises("unknown_chat_stream", lambda: list(client.chat(model=unknown, messages=messages, stream=True)), is_not_found("chat"))
raises("unknown_generate", lambda: client.generate(model=unknown, prompt=prompt), is_not_found("generate"))
raises("unknown_embed", lambda: client.embed(model=unknown, input="hello"), is_not_found("embed"))
raises("unknown_show", lambda: client.show(unknown), is_not_found("show"))

print(json.dumps(out), flush=True)
sys.exit(0 if out["ok"] else 1)
