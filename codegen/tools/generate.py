"""`qkgen generate MODEL.gguf --prompt TEXT`: greedy generation with every linear layer and the
token embedding on qkgen's kernels (qkgen.torch.model.load_llama), printing the text and tokens/s,
or with --json {"tokens": [...], "text": ..., "tokens_per_s": ...}. Progress lines go to stderr
while loading, only when stderr is a terminal."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from ..errors import QKGenValueError

BACKENDS = ("cuda", "sycl", "opencl")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="a GGUF file of a Llama-family model")
    p.add_argument("--prompt", required=True, help="the prompt, used as given unless --chat")
    p.add_argument("--max-new-tokens", type=int, default=64, help="tokens to generate at most (default 64)")
    p.add_argument("--chat", action="store_true", help="wrap the prompt in the model's chat template")
    p.add_argument("--backend", default=None, help=f"one of {', '.join(BACKENDS)} (default: cuda when there is a "
                   "GPU, else the OpenCL or SYCL CPU device)")  # fmt: skip
    p.add_argument("--device", default=None, help="a device index or name substring")
    p.add_argument("--json", action="store_true", help='print {"tokens": [...], "text": ...} instead')
    p.add_argument("--compare", action="store_true",
                   help="also generate with transformers' own load of the file (fp32) and print both speeds")  # fmt: skip


def check(args) -> None:
    if not isinstance(args.model, str) or not os.path.isfile(args.model):
        raise QKGenValueError(f"model: {args.model!r} is not a file; allowed: a path to a .gguf file")
    if not isinstance(args.prompt, str) or not args.prompt:
        raise QKGenValueError("prompt: empty; allowed: a non-empty text")
    n = args.max_new_tokens
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 1 << 16:
        raise QKGenValueError(f"max_new_tokens: {n!r}; allowed: an int in 1..65536")
    if args.backend is not None and args.backend not in BACKENDS:
        raise QKGenValueError(f"backend: {args.backend!r}; allowed: {', '.join(BACKENDS)}")


def _backend(args) -> str | None:
    if args.backend is not None:
        return args.backend
    import torch

    return "cuda" if torch.cuda.is_available() and os.environ.get("QKGEN_BACKEND") in (None, "cuda") else None


def generate(model, tokenizer, prompt: str, max_new_tokens: int, chat: bool = False) -> dict:
    """Greedy generation: {"tokens": new token ids, "text": their text, "tokens_per_s": ...}."""
    import torch

    if chat:
        ids = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                            return_tensors="pt", return_dict=True)["input_ids"]  # fmt: skip
    else:
        ids = tokenizer(prompt, return_tensors="pt").input_ids
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    ids = ids.to(device)
    start = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens,
                             do_sample=False, pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id)  # fmt: skip
    seconds = time.perf_counter() - start
    new = out[0, ids.shape[1] :].tolist()
    return {"tokens": new, "text": tokenizer.decode(new, skip_special_tokens=True),
            "tokens_per_s": len(new) / seconds if seconds > 0 else 0.0}  # fmt: skip


def main(args) -> int:
    check(args)
    from ..torch.model import load_llama

    model, tokenizer = load_llama(args.model, _backend(args), args.device)
    result = generate(model, tokenizer, args.prompt, args.max_new_tokens, args.chat)
    if args.compare:
        from pathlib import Path

        from transformers import AutoModelForCausalLM

        p = Path(args.model)
        hf = AutoModelForCausalLM.from_pretrained(str(p.parent), gguf_file=p.name, torch_dtype="float32")
        theirs = generate(hf, tokenizer, args.prompt, args.max_new_tokens, args.chat)
        result["transformers"] = {k: theirs[k] for k in ("tokens", "tokens_per_s")}
        result["same_tokens"] = theirs["tokens"] == result["tokens"]
    if args.json:
        print(json.dumps(result))
    else:
        print(result["text"])
        line = f"qkgen: {len(result['tokens'])} tokens, {result['tokens_per_s']:.2f} tokens/s"
        if args.compare:
            line += (f"; transformers (fp32, CPU): {result['transformers']['tokens_per_s']:.2f} tokens/s; "
                     f"same tokens: {'yes' if result['same_tokens'] else 'no'}")  # fmt: skip
        print(line, file=sys.stderr)
    return 0


def _standalone() -> int:
    p = argparse.ArgumentParser(prog="qkgen generate", description=__doc__.split("\n")[0])
    add_arguments(p)
    try:
        return main(p.parse_args())
    except QKGenValueError as e:
        print(f"qkgen generate: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(_standalone())
