"""GPU timing helpers shared by the tools/gpu_*_probe.py scripts (PyTorch with CUDA)."""
import statistics

import torch


def median_ms(fn, iters, warmup=3):
    """Median over `iters` calls of fn's GPU time between two CUDA events, after warm-up."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


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
