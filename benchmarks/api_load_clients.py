"""The polling mix of api_load.py, and its fallback load generator when wrk is not installed.

Python threads on the same cores as the server are a weak generator (the GIL and
their own CPU inflate latency); api_load.py uses them only without wrk and says so.
"""

from __future__ import annotations

import http.client
import random
import threading
import time

# What an open dashboard and a script poll: (weight, path template). api_load.lua has the same.
MIX = (
    (3, "/api/v1/streams/"),
    (3, "/api/v1/streams/{id}/"),
    (3, "/api/v1/streams/{id}/partitions/?ordering=-lag"),
    (2, "/api/v1/streams/{id}/lag/?since=-10m"),
    (1, "/api/v1/streams/{id}/lineage/?since=-10m"),
    (1, "/api/v1/streams/{id}/transitions/"),
    (1, "/api/v1/streams/{id}/errors/"),
)


def client_loop(port: int, paths: list[str], token: str, until: float, out: list, errors: list) -> None:
    """Request random paths of the mix on one keep-alive connection until `until`."""
    rng = random.Random()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Token {token}", "Accept": "application/json"}
    while time.monotonic() < until:
        path = rng.choice(paths)
        start = time.perf_counter()
        try:
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
            response.read()
            if response.status >= 300:
                errors.append(f"{response.status} {path}")
        except (OSError, http.client.HTTPException) as error:
            errors.append(f"{type(error).__name__} {path}")
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        out.append(time.perf_counter() - start)
    conn.close()


def run_python_clients(port: int, clients: int, token: str, ids: list[int], seconds: float) -> dict:
    """Run `clients` threads over the mix for `seconds`; return requests, seconds, percentiles, errors."""
    paths = [p.format(id=i) for i in ids for weight, p in MIX for _ in range(weight)]
    until = time.monotonic() + seconds
    latencies, errors = [], []
    threads = [
        threading.Thread(target=client_loop, args=(port, paths, token, until, latencies, errors))
        for _ in range(clients)
    ]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ordered = sorted(latencies) or [0.0]

    def pct(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    return {
        "requests": len(latencies),
        "seconds": time.monotonic() - started,
        "p50": pct(0.50),
        "p90": pct(0.90),
        "p99": pct(0.99),
        "max": ordered[-1] * 1000,
        "errors": len(errors),
        "bad": " ".join(sorted(set(errors))[:5]),
    }
