"""GPU timing helpers shared by the tools/gpu_*_probe.py scripts (PyTorch with CUDA)."""
import statistics
import sys
import time

import torch


def require_cuda(script):
    """Exit 77 (skipped) with a line saying so when PyTorch sees no CUDA device."""
    if not torch.cuda.is_available():
        print(f"{script}: no CUDA device; skipped")
        sys.exit(77)


def _median_ms(fn, iters, warmup, time_one_ms):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    return statistics.median(time_one_ms(fn) for _ in range(iters))


def _event_ms(fn):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def _wall_ms(fn):
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3


def median_ms(fn, iters, warmup=3):
    """Median over `iters` calls of fn's GPU time between two CUDA events, after warm-up."""
    return _median_ms(fn, iters, warmup, _event_ms)


def wall_ms(fn, iters, warmup=3):
    """Median over `iters` calls of fn's wall time to a synchronised GPU (host time included)."""
    return _median_ms(fn, iters, warmup, _wall_ms)


def graph_ms(fn, iters):
    """fn captured in a CUDA graph (after warm-up on a side stream) and replayed: median_ms of
    the replay, so the host's launch time does not enter."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return median_ms(graph.replay, iters)
