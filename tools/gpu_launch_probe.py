#!/usr/bin/env python3
"""Measure the GPU time one more kernel costs when kernels are queued back to back.

N tiny kernels (an in-place add on a 1-element tensor) captured in a CUDA graph and replayed,
so the host's launch time does not enter: GPU time / N is the per-kernel cost of the GPU's
front end (launch, ramp, drain) that a profile's `kernel_launch_overhead_us` stands for. Also
the same kernels spread over 4 streams (Transformer Engine's GroupedLinear issues its per-expert
GEMMs so), and N kernels of a small GEMM (256 x 1536 x 2048, bf16) on one stream against one
batched GEMM of the N.

  tools/gpu_launch_probe.py [--n 1000]

Needs PyTorch with CUDA and a GPU; exits 77 without them.
"""
import argparse
import sys

try:
    import torch
    from gpu_timing import graph_ms
except ImportError:
    print("gpu_launch_probe.py: PyTorch is not installed; skipped")
    sys.exit(77)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--iters", type=int, default=20)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("gpu_launch_probe.py: no CUDA device; skipped")
        sys.exit(77)
    n = args.n
    x = torch.zeros(1, device="cuda")
    one = graph_ms(lambda: x.add_(1), args.iters) * 1e3
    chain = graph_ms(lambda: [x.add_(1) for _ in range(n)], args.iters) * 1e3
    print(f"# {torch.cuda.get_device_name()} torch {torch.__version__}")
    print(f"one tiny kernel in a graph: {one:.2f} us; {n} in a graph: {chain:.1f} us = "
          f"{chain / n:.3f} us per kernel")
    streams = [torch.cuda.Stream() for _ in range(4)]
    xs = [torch.zeros(1, device="cuda") for _ in range(4)]

    def spread():
        main_stream = torch.cuda.current_stream()
        for s in streams:
            s.wait_stream(main_stream)
        for i in range(n):
            with torch.cuda.stream(streams[i % 4]):
                xs[i % 4].add_(1)
        for s in streams:
            main_stream.wait_stream(s)

    four = graph_ms(spread, args.iters) * 1e3
    print(f"{n} tiny kernels over 4 streams in a graph: {four:.1f} us = {four / n:.3f} us per kernel")
    e, m, nn, k = 16, 256, 1536, 2048
    a = torch.randn(e, m, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(e, k, nn, device="cuda").to(torch.bfloat16)
    out = torch.empty(e, m, nn, device="cuda", dtype=torch.bfloat16)
    batched = graph_ms(lambda: torch.bmm(a, b, out=out), args.iters) * 1e3
    single = graph_ms(lambda: torch.mm(a[0], b[0], out=out[0]), args.iters) * 1e3
    looped = graph_ms(lambda: [torch.mm(a[i], b[i], out=out[i]) for i in range(e)],
                      args.iters) * 1e3
    print(f"GEMM {m}x{nn}x{k} bf16: one {single:.2f} us; {e} in a loop {looped:.1f} us; "
          f"batched x{e} {batched:.1f} us; (loop - batched)/{e - 1} = "
          f"{(looped - batched) / (e - 1):.2f} us")


if __name__ == "__main__":
    main()
