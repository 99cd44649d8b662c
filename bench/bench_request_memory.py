"""What one large request costs ``toolwire serve`` in memory (issue 19, part 6).

A fake Chat upstream (``load_upstream.py``) and a fresh ``toolwire serve`` process per size
(healing, or ``--no-heal``), on loopback. For each body size, one streamed request whose user
message makes the body that many bytes (ASCII text), with the load test's tool; the proxy's
RSS is sampled every 2 ms with psutil from before the request until its stream ended.
Printed: RSS before, the peak, after, the peak minus before ("cost"), and cost per byte of
body. ``--concurrent N`` sends N such requests at once (many clients at the body cap: past
``max_request_bytes_in_flight`` the proxy answers 503, counted in ``errors``).

    python bench/bench_request_memory.py --sizes 1 4 16 30
    python bench/bench_request_memory.py --sizes 16 --concurrent 20
"""

from __future__ import annotations

import argparse
import json
import threading
import time

import httpx
import psutil
from bench_serve_load import TOOLS, start_proxy, start_upstream

MiB = 1024 * 1024


def body_of(size: int) -> bytes:
    request = {
        "model": "load",
        "messages": [{"role": "user", "content": ""}],
        "tools": TOOLS,
        "stream": True,
        "max_tokens": 512,
    }
    empty = len(json.dumps(request).encode())
    request["messages"][0]["content"] = "x" * max(0, size - empty)
    return json.dumps(request).encode()


def measure(base: str, pid: int, size: int, concurrent: int) -> dict[str, float]:
    process = psutil.Process(pid)
    body = body_of(size)
    before = process.memory_info().rss
    peak = before
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, process.memory_info().rss)
            time.sleep(0.002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    errors = 0

    def one() -> None:
        nonlocal errors
        with httpx.Client(timeout=120) as client:
            with client.stream("POST", f"{base}/chat/completions", content=body) as response:
                for _ in response.iter_bytes():
                    pass
                if response.status_code != 200:
                    errors += 1

    senders = [threading.Thread(target=one) for _ in range(concurrent)]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join()
    time.sleep(0.2)
    done.set()
    sampler.join()
    after = process.memory_info().rss
    cost = peak - before
    return {
        "body_mib": size / MiB,
        "concurrent": concurrent,
        "before_mb": before / 1e6,
        "peak_mb": peak / 1e6,
        "after_mb": after / 1e6,
        "cost_mb": cost / 1e6,
        "cost_per_body_byte": cost / (size * concurrent),
        "errors": errors,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1, 4, 16, 30])
    parser.add_argument("--concurrent", type=int, default=1)
    parser.add_argument("--no-heal", action="store_true")
    args = parser.parse_args()
    upstream, upstream_url = start_upstream()
    try:
        for size in args.sizes:
            # A new proxy per size (memory freed is not always given back to the system), warmed
            # by one small request (lazy imports, the tools compiled).
            proxy, base = start_proxy(upstream_url, *(["--no-heal"] if args.no_heal else []))
            try:
                measure(base, proxy.pid, 4096, 1)
                result = measure(base, proxy.pid, int(size * MiB), args.concurrent)
            finally:
                proxy.terminate()
                proxy.wait(10)
            print(json.dumps({key: round(value, 2) for key, value in result.items()}))
    finally:
        upstream.terminate()
        upstream.wait(10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
