"""How sure SmolLM2-135M is of each pick a framework-agent run rests on (issue 21).

Run: ``.venv/bin/python bench/agent_margins.py RESULT.json [--draws 3] [--limit N]``, where
``RESULT.json`` is written by ``bench/bench_framework_agents.py --json RESULT.json``.

For each request that reached the model server through the proxy, the prompt is rendered by
llama-cpp-python's own ``chatml-function-calling`` handler (given a stand-in for the model that
keeps the prompt: ``tests/demo/test_llama_prompt.py``), then decoded greedily on the
model in this process under the handler's first grammar for ``tool_choice: "auto"``
(``message:`` or ``functions.<name>:``). Printed: the pick, and its margin in nats: at each
token where the candidates part, the logit of the chosen token minus that of the best token
leading to another candidate; the smallest one is how far a CPU's rounding would have to move
the model to change the run. Each request is measured again with its call ids drawn afresh
(``--draws``): the server puts a new completion id in every call id, and the results sent back
name them, so no two runs show the model the same prompt.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from llama_cpp import Llama

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from demo.test_llama_prompt import rendered_prompt  # the server's own handler renders it

from toolwire.cli.demo.model_file import check_local_extra


class Model:
    """The model in process, with the prompt cache of its last evaluation."""

    def __init__(self) -> None:
        # --n_ubatch 1, as the demo's server: 0.3.36 on an AMX CPU crashes on longer batches.
        self.llama = Llama(
            str(check_local_extra()), n_ctx=2048, n_ubatch=1, logits_all=True, verbose=False
        )
        size = self.llama.n_vocab()
        self.pieces = [
            self.llama.detokenize([token]).decode("utf-8", "replace") for token in range(size)
        ]
        self._allowed: dict[tuple[tuple[str, ...], str], list[int]] = {}

    def _evaluate(self, tokens: list[int]) -> None:
        done = list(self.llama.input_ids[: self.llama.n_tokens])
        same = 0
        while same < min(len(done), len(tokens) - 1) and done[same] == tokens[same]:
            same += 1
        self.llama.n_tokens = same  # eval() drops the cache from here on
        self.llama.eval(tokens[same:])

    def _next_logits(self) -> Any:
        return np.array(self.llama.scores[self.llama.n_tokens - 1])

    def pick(self, prompt: str, candidates: list[str]) -> tuple[str, list[float]]:
        """Greedy decoding of ``prompt`` restricted to ``candidates``: the pick, the margins."""
        self._evaluate(self.llama.tokenize(prompt.encode(), add_bos=False, special=True))
        text, margins = "", []
        while text not in candidates:
            key = (tuple(candidates), text)
            if key not in self._allowed:
                self._allowed[key] = [
                    token
                    for token, piece in enumerate(self.pieces)
                    if piece and any(c.startswith(text + piece) for c in candidates)
                ]
            logits = self._next_logits()
            ranked = sorted(self._allowed[key], key=lambda token: -logits[token])
            best = ranked[0]
            reach = {c for c in candidates if c.startswith(text + self.pieces[best])}
            for other in ranked[1:]:
                if not {c for c in candidates if c.startswith(text + self.pieces[other])} <= reach:
                    margins.append(float(logits[best] - logits[other]))
                    break
            text += self.pieces[best]
            self.llama.eval([best])
        return text, margins


def redrawn(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with every completion id in its call ids drawn afresh."""
    text = json.dumps(body)
    for old in set(re.findall(r"cmpl-[0-9a-f-]{36}", text)):
        text = text.replace(old, f"cmpl-{uuid.uuid4()}")
    result: dict[str, Any] = json.loads(text)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("result", type=Path, help="bench_framework_agents.py --json output")
    parser.add_argument("--draws", type=int, default=3, help="call-id draws per request")
    parser.add_argument("--limit", type=int, default=None, help="the first N proxied runs")
    args = parser.parse_args()
    rows = json.loads(args.result.read_text(encoding="utf-8"))["modes"]["proxy"]["rows"]
    model = Model()
    smallest = float("inf")
    for row in rows[: args.limit]:
        picks = []
        for body in row["requests"]:
            names = [tool["function"]["name"] for tool in body["tools"]]
            candidates = [f"functions.{name}:" for name in names] + ["message:"]
            found = []
            for draw in range(args.draws):
                sent = body if draw == 0 else redrawn(body)
                prompt = rendered_prompt(sent["messages"], "auto", sent["tools"])
                pick, margins = model.pick(prompt, candidates)
                found.append((pick.removeprefix("functions.").rstrip(":"), min(margins)))
            smallest = min(smallest, *(margin for _, margin in found))
            kinds = {name for name, _ in found}
            picks.append(f"{'/'.join(sorted(kinds))} {min(m for _, m in found):.2f}")
        print(f"{row['task']:<9} {row['budget']:>4} {row['agent']:<23} " + ", ".join(picks))
    print(f"smallest margin: {smallest:.2f} nats")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
