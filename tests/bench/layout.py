"""Memory layout as a process's state: the same product as scores' matmul at T = 512 (four heads
of (512, 16) @ (16, 512), float32, numpy's batched matmul on the BLAS threads) written into an
output buffer whose address lies 0, 16, 32, 64, 2048 or 4080 bytes past a 4 KiB page, in one
process on the warm heap (perf.warm_heap), each offset in turn, five rounds, each timing >= 50 ms
of calls. numpy's own buffers are only 16-byte aligned; the hypothesis this script weighs: where
each lands stays fixed for a process's life, so if the offset moves the matmul, a process keeps
its speed for its life.

    python tests/bench/layout.py
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "experiments" / "15-attention-perf"))
import perf  # noqa: E402

OFFSETS = (0, 16, 32, 64, 2048, 4080)


def buffer_at(shape, offset):
    """A float32 array of `shape` whose data start `offset` bytes past a 4 KiB boundary."""
    n = int(np.prod(shape)) * 4
    raw = np.empty(n + 8192, dtype=np.uint8)
    start = (-raw.ctypes.data) % 4096 + offset
    return raw[start:start + n].view(np.float32).reshape(shape)


def seconds_per_call(fn, min_time=0.05):
    """After one untimed call, perf.py's batch (run_for): its seconds over its calls."""
    fn()
    n, seconds = perf.run_for(fn, min_time)
    return seconds / n


def main():
    perf.warm_heap()
    mha, T = perf.init_mha(64, 4, 0), 512
    Q, K, _ = perf.qkv_proj(perf.make_input(T, mha, 0), mha)
    Qh, KhT = perf.split_heads(Q, 4), perf.split_heads(K, 4).transpose(0, 2, 1)
    times = {off: [] for off in OFFSETS}
    for _ in range(5):
        for off in OFFSETS:
            P = buffer_at((4, T, T), off)
            times[off].append(seconds_per_call(lambda: np.matmul(Qh, KhT, out=P)))
    for off, t in times.items():
        print(f"output {off:4d} bytes past a page ({off % 64:2d} past 64 B): matmul median "
              f"{1e3 * np.median(t):.3f} ms, range {1e3 * min(t):.3f}-{1e3 * max(t):.3f}")


if __name__ == "__main__":
    main()
