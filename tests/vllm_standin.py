"""A local stand-in for ``vllm serve MODEL --enable-lora``, for the faults a real server cannot be made to show (an
engine that lists an adapter but samples from the base weights; a server without runtime LoRA updating) and the
process tests that need a server up in seconds (a real vLLM built for CPU takes 20-110 s here). Everything else
runs against a real vLLM: tests/test_vllm_real.py.

Written from vLLM's OpenAI-compatible server (``entrypoints/openai/completion/protocol.py`` and ``serving.py``,
``models/serving.py``, ``serve/lora/api_router.py``) and its tests of adapter loading, not copied from it. What it
keeps faithfully, because the vLLM sampler relies on it:

- ``GET /health``; ``GET /v1/models``: the base model first (``id`` = served name, ``root`` = model path), then one
  card per loaded adapter (``id`` = its name, ``root`` = its path, ``parent`` = the base).
- ``POST /v1/completions``: ``prompt`` as a list of token ids, ``max_tokens`` (default 16), ``temperature``,
  ``top_p``, ``seed``, ``stop_token_ids``, ``logprobs`` (the sampled token's log-prob, and top-k), ``prompt_logprobs``
  (``[None, {id: {logprob, rank, decoded_token}}, ...]``), ``return_tokens_as_token_ids`` (tokens as
  ``"token_id:N"``), ``return_token_ids``, ``skip_special_tokens``; the response names the model that served it (the
  adapter's name, or the base's), ``finish_reason`` ``stop`` (EOS or a stop token, kept in the ids) or ``length``;
  log-probs after temperature and top-p (``--logprobs-mode processed_logprobs``) or raw.
- ``POST /v1/load_lora_adapter`` / ``/v1/unload_lora_adapter`` exist only with ``VLLM_ALLOW_RUNTIME_LORA_UPDATING``
  set; the same status codes and messages (400 already loaded / rank above ``--max-lora-rank`` /
  ``modules_to_save`` / a bad config, 404 no adapter at that path or unknown name; 200 with a plain-text
  ``Success: ...``); a request for a model that is not served gets 404 ``The model `X` does not exist.``

The model is run with transformers + PEFT (a base copy per adapter; tiny models only). ``ignore_adapters=True``
reproduces a known failure of real engines: the adapter "loads" and is listed, but sampling uses the base weights.

Run it like vLLM: ``python tests/vllm_standin.py serve MODEL --enable-lora --max-lora-rank 16 --port 8000``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import torch


class Reply(Exception):
    """An HTTP answer other than 200 JSON (an error, or vLLM's plain-text success of the adapter routes)."""

    def __init__(self, status: int, payload: Any):
        super().__init__(str(payload))
        self.status, self.payload = status, payload


def _err(status: int, kind: str, message: str, param: str | None = None) -> Reply:
    return Reply(status, {"error": {"message": message, "type": kind, "param": param, "code": status}})


class StandIn:
    def __init__(self, model_path: str | Path, *, served_name: str | None = None, enable_lora: bool = True,
                 max_lora_rank: int = 16, logprobs_mode: str = "processed_logprobs", ignore_adapters: bool = False,
                 host: str = "127.0.0.1", port: int = 0, dtype: str = "float32"):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.model_path = str(model_path)
        self.served = served_name or self.model_path
        self.enable_lora, self.max_lora_rank = enable_lora, int(max_lora_rank)
        self.logprobs_mode, self.ignore_adapters = logprobs_mode, ignore_adapters
        self.runtime_lora = os.environ.get("VLLM_ALLOW_RUNTIME_LORA_UPDATING", "").lower() in ("1", "true")
        self.tok = AutoTokenizer.from_pretrained(self.model_path)
        self.dtype = torch.float32 if dtype == "auto" else getattr(torch, dtype)
        self.base = AutoModelForCausalLM.from_pretrained(self.model_path, dtype=self.dtype).eval()
        self.adapters: dict[str, tuple[str, Any]] = {}  # name -> (path, model with that adapter)
        self.lock = threading.Lock()
        self.requests: list[dict] = []
        self.httpd = ThreadingHTTPServer((host, port), self._handler())
        self.url = f"http://{host}:{self.httpd.server_address[1]}"

    # ------------------------------------------------------------------ HTTP plumbing
    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, payload: Any) -> None:
                text = isinstance(payload, str)
                data = payload.encode() if text else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "text/plain" if text else "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _route(self, method: str) -> None:
                body = None
                if method == "POST":
                    body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                try:
                    self._send(200, server.route(method, self.path, body))
                except Reply as r:
                    self._send(r.status, r.payload)

            def do_GET(self):
                self._route("GET")

            def do_POST(self):
                self._route("POST")

        return Handler

    def route(self, method: str, path: str, body: dict | None) -> Any:
        with self.lock:
            self.requests.append({"method": method, "path": path, "body": body})
            if (method, path) == ("GET", "/health"):
                return ""
            if (method, path) == ("GET", "/v1/models"):
                return self.models()
            if (method, path) == ("POST", "/v1/completions"):
                return self.complete(body or {})
            if self.runtime_lora and (method, path) == ("POST", "/v1/load_lora_adapter"):
                return self.load(body or {})
            if self.runtime_lora and (method, path) == ("POST", "/v1/unload_lora_adapter"):
                return self.unload(body or {})
        raise Reply(404, {"detail": "Not Found"})

    def __enter__(self) -> "StandIn":
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # ------------------------------------------------------------------ models and adapters
    def models(self) -> dict:
        now = int(time.time())
        cards = [{"id": self.served, "object": "model", "created": now, "owned_by": "vllm", "root": self.model_path,
                  "parent": None, "max_model_len": int(self.base.config.max_position_embeddings)}]
        cards += [{"id": name, "object": "model", "created": now, "owned_by": "vllm", "root": path,
                   "parent": self.served} for name, (path, _) in self.adapters.items()]
        return {"object": "list", "data": cards}

    def load(self, body: dict) -> str:
        from peft import PeftModel
        from transformers import AutoModelForCausalLM

        name, path = body.get("lora_name"), body.get("lora_path")
        if not name or not path:
            raise _err(400, "InvalidUserInput", "Both 'lora_name' and 'lora_path' must be provided.")
        if name in self.adapters and not body.get("load_inplace"):
            raise _err(400, "InvalidUserInput", f"The lora adapter '{name}' has already been loaded. If you want to "
                       "load the adapter in place, set 'load_inplace' to True.")
        if not self.enable_lora:
            raise _err(400, "BadRequestError", "LoRA is not enabled. Use --enable-lora to enable LoRA.")
        config_file = Path(path) / "adapter_config.json"
        if not config_file.is_file():
            raise _err(404, "NotFoundError", f"Loading lora {name} failed: No adapter found for {path}")
        try:
            config = json.loads(config_file.read_text())
        except ValueError as exc:
            raise _err(400, "BadRequestError", f"Invalid PEFT config: {exc}") from None
        problems = []
        if int(config.get("r", 0)) > self.max_lora_rank:
            problems.append(f"LoRA rank {config['r']} is greater than max_lora_rank {self.max_lora_rank}.")
        if config.get("modules_to_save"):
            problems.append("vLLM only supports modules_to_save being None.")
        if problems:
            raise _err(400, "BadRequestError", " ".join(problems))
        base = AutoModelForCausalLM.from_pretrained(self.model_path, dtype=self.dtype)
        self.adapters[name] = (str(path), PeftModel.from_pretrained(base, str(path)).eval())
        return f"Success: LoRA adapter '{name}' added successfully."

    def unload(self, body: dict) -> str:
        name = body.get("lora_name")
        if not name:
            raise _err(400, "InvalidUserInput", "'lora_name' needs to be provided to unload a LoRA adapter.")
        if name not in self.adapters:
            raise _err(404, "NotFoundError", f"The lora adapter '{name}' cannot be found.")
        del self.adapters[name]
        return f"Success: LoRA adapter '{name}' removed successfully."

    # ------------------------------------------------------------------ completions
    def _model_for(self, name: str | None):
        if not name or name == self.served:
            return self.served, self.base
        if name in self.adapters:
            return name, (self.base if self.ignore_adapters else self.adapters[name][1])
        raise _err(404, "NotFoundError", f"The model `{name}` does not exist.", "model")

    def complete(self, body: dict) -> dict:
        served, model = self._model_for(body.get("model"))
        prompt = body.get("prompt")
        if not isinstance(prompt, list) or not prompt or not all(isinstance(t, int) and t >= 0 for t in prompt):
            raise _err(400, "BadRequestError", "this stand-in takes the prompt as one list of token ids", "prompt")
        max_tokens = 16 if body.get("max_tokens") is None else int(body["max_tokens"])
        temperature = 1.0 if body.get("temperature") is None else float(body["temperature"])
        top_p = 1.0 if body.get("top_p") is None else float(body["top_p"])
        stop_ids = [int(t) for t in body.get("stop_token_ids") or []]
        eos = [self.tok.eos_token_id, *stop_ids]
        greedy = temperature < 1e-5
        torch.manual_seed(int(body["seed"]) if body.get("seed") is not None else random.getrandbits(31))
        x = torch.tensor([prompt])
        kw: dict[str, Any] = dict(max_new_tokens=max_tokens, do_sample=not greedy, output_scores=True,
                                  output_logits=True, return_dict_in_generate=True, eos_token_id=eos,
                                  pad_token_id=self.tok.pad_token_id, top_k=0)
        if not greedy:
            kw.update(temperature=temperature, top_p=top_p)
        with torch.no_grad():
            out = model.generate(x, attention_mask=torch.ones_like(x), **kw)
        gen = out.sequences[0, len(prompt):].tolist()
        per_step = out.scores if self.logprobs_mode == "processed_logprobs" else out.logits
        lps = [float(per_step[i][0].float().log_softmax(-1)[t]) for i, t in enumerate(gen)]
        skip = body.get("skip_special_tokens", True)
        choice: dict[str, Any] = {
            "index": 0, "text": self.tok.decode(gen, skip_special_tokens=skip),
            "finish_reason": "stop" if gen and gen[-1] in eos else "length",
            "stop_reason": gen[-1] if gen and gen[-1] in stop_ids else None,
            "token_ids": gen if body.get("return_token_ids") else None,
            "prompt_token_ids": prompt if body.get("return_token_ids") else None,
            "logprobs": self._logprobs(gen, lps, body) if body.get("logprobs") is not None else None,
            "prompt_logprobs": self._prompt_logprobs(model, prompt) if body.get("prompt_logprobs") is not None
            else None,
        }
        return {"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": int(time.time()),
                "model": served, "choices": [choice],
                "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(gen),
                          "total_tokens": len(prompt) + len(gen)}}

    def _token(self, t: int, as_id: bool) -> str:
        return f"token_id:{t}" if as_id else self.tok.decode([t])

    def _logprobs(self, gen: list[int], lps: list[float], body: dict) -> dict:
        as_id = bool(body.get("return_tokens_as_token_ids"))
        tokens = [self._token(t, as_id) for t in gen]
        offsets = [sum(len(x) for x in tokens[:i]) for i in range(len(tokens))]
        return {"text_offset": offsets, "token_logprobs": [max(lp, -9999.0) for lp in lps], "tokens": tokens,
                "top_logprobs": [{tok: max(lp, -9999.0)} for tok, lp in zip(tokens, lps)]}

    def _prompt_logprobs(self, model, prompt: list[int]) -> list:
        x = torch.tensor([prompt])
        with torch.no_grad():
            logp = model(input_ids=x, attention_mask=torch.ones_like(x)).logits[0, :-1].float().log_softmax(-1)
        out: list = [None]
        for i, t in enumerate(prompt[1:]):
            rank = int((logp[i] > logp[i, t]).sum()) + 1
            out.append({str(t): {"logprob": float(logp[i, t]), "rank": rank, "decoded_token": self.tok.decode([t])}})
        return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="vllm_standin")
    sub = ap.add_subparsers(dest="cmd", required=True)
    serve = sub.add_parser("serve")
    serve.add_argument("model")
    serve.add_argument("--enable-lora", action="store_true")
    serve.add_argument("--max-lora-rank", type=int, default=16)
    serve.add_argument("--max-loras", type=int, default=1)
    serve.add_argument("--lora-target-modules", nargs="+")  # which layers get LoRA: the adapters say it here
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--logprobs-mode", default="raw_logprobs",
                       choices=["raw_logprobs", "processed_logprobs"])
    serve.add_argument("--served-model-name")
    serve.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    serve.add_argument("--max-model-len", type=int)
    serve.add_argument("--max-num-batched-tokens", type=int)  # vLLM's scheduling: nothing to do here
    serve.add_argument("--no-enable-chunked-prefill", action="store_true")
    serve.add_argument("--enable-prompt-tokens-details", action="store_true")
    args = ap.parse_args(argv)
    server = StandIn(args.model, served_name=args.served_model_name, enable_lora=args.enable_lora,
                     max_lora_rank=args.max_lora_rank, logprobs_mode=args.logprobs_mode, host=args.host,
                     port=args.port, dtype=args.dtype)
    server.httpd.serve_forever()


if __name__ == "__main__":
    main()
