#!/usr/bin/env python3
"""Measure how a GEMM's time grows with K at a fixed output, to see what each output tile costs
beyond its main loop (prologue, epilogue, scheduling) on the GPU's cuBLASLt kernels.

For a fixed M x N output (and batch), time(K) = waves x (overhead + K/k_step x t_step): the
intercept of a straight-line fit over K is what the tiles cost besides their main loops. Shapes:
128 x (2048 x 1536) strided-batched GEMMs (Qwen3-30B-A3B's expert fc1 weight gradient at EP1,
K = tokens per expert), in the forward layout (A @ B) and the weight-gradient one (A^T @ B), and
one 8192 x 8192 GEMM. bf16, CUDA-graph replays, median of 20. Also the cuBLASLt kernel names
(torch.profiler) at K = 256.

  tools/gpu_gemm_k_probe.py

Needs PyTorch with CUDA and a GPU; exits 77 without them.
"""
import sys

try:
    import torch
    from gpu_timing import graph_ms, require_cuda
except ImportError:
    print("gpu_gemm_k_probe.py: PyTorch is not installed; skipped")
    sys.exit(77)


def fit(ks, times):
    """Least-squares line time = a + b*K; returns (a, b)."""
    n = len(ks)
    mk, mt = sum(ks) / n, sum(times) / n
    b = sum((k - mk) * (t - mt) for k, t in zip(ks, times)) / sum((k - mk) ** 2 for k in ks)
    return mt - b * mk, b


def kernel_names(fn):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})


def main():
    require_cuda("gpu_gemm_k_probe.py")
    torch.manual_seed(0)
    dev, bf16 = "cuda", torch.bfloat16
    print(f"# {torch.cuda.get_device_name()} torch {torch.__version__}")
    shapes = {
        "bmm 128 x 2048x1536xK, A@B": lambda k: (
            lambda a=torch.randn(128, 2048, k, device=dev, dtype=bf16),
            b=torch.randn(128, k, 1536, device=dev, dtype=bf16): torch.bmm(a, b)),
        "bmm 128 x 2048x1536xK, A^T@B (wgrad)": lambda k: (
            lambda a=torch.randn(128, k, 2048, device=dev, dtype=bf16),
            b=torch.randn(128, k, 1536, device=dev, dtype=bf16): torch.bmm(a.transpose(1, 2), b)),
        "8192x8192xK, A@B": lambda k: (
            lambda a=torch.randn(8192, k, device=dev, dtype=bf16),
            b=torch.randn(k, 8192, device=dev, dtype=bf16): a @ b),
    }
    ks = [64, 128, 256, 512, 1024, 2048]
    for name, make in shapes.items():
        times = []
        for k in ks:
            fn = make(k)
            times.append(graph_ms(fn, 20) * 1e3)
        a, b = fit(ks[2:], times[2:])
        cells = ", ".join(f"K={k}: {t:.1f}" for k, t in zip(ks, times))
        print(f"{name}: {cells} us; fit over K>=256: {a:.1f} us + {b * 64:.2f} us per 64 of K")
        print(f"  kernels at K=256: {kernel_names(make(256))}")


if __name__ == "__main__":
    main()
