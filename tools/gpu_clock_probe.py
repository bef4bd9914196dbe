#!/usr/bin/env python3
"""Sustained GEMM throughput and SM clock of a GPU under continuous matrix load.

Runs back-to-back 8192^3 GEMMs on random normal operands (bf16, then FP8 with per-tensor scales
through torch._scaled_mm; --kinds adds Llama-3.1-8B's fc1 GEMM and cuDNN causal attention forward
and backward) for --seconds each, and reports per window of --window seconds the
achieved TFLOP/s (CUDA events around each batch of GEMMs) beside the SM clock, power draw and
temperature NVML reports (sampled every 0.2 s on a thread). The first window shows the boost a
short benchmark sees; the last ones what a training step runs at.

  tools/gpu_clock_probe.py [--seconds 30] [--window 5]

Needs PyTorch with CUDA, nvidia-ml-py (pynvml) and a GPU; exits 77 without them.
"""
import argparse
import statistics
import sys
import threading
import time

try:
    import pynvml
    import torch
except ImportError:
    print("gpu_clock_probe.py: PyTorch or nvidia-ml-py is not installed; skipped")
    sys.exit(77)

N = 8192
BATCH = 20  # GEMMs between two CUDA events


class Sampler(threading.Thread):
    """SM clock (MHz), power (W) and temperature (C) every `period` seconds, timestamped."""

    def __init__(self, period=0.2):
        super().__init__(daemon=True)
        pynvml.nvmlInit()
        self.handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        self.period = period
        self.samples = []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.samples.append((time.perf_counter(),
                                 pynvml.nvmlDeviceGetClockInfo(self.handle, pynvml.NVML_CLOCK_SM),
                                 pynvml.nvmlDeviceGetPowerUsage(self.handle) / 1000.0,
                                 pynvml.nvmlDeviceGetTemperature(self.handle,
                                                                 pynvml.NVML_TEMPERATURE_GPU)))
            time.sleep(self.period)


def attention_fn():
    """cuDNN causal attention forward and backward, Llama-3.1-8B's shape (32/8 heads, s8192,
    d128): the fused attention Transformer Engine runs on Hopper. FLOPs: 4·h·s²·d/2 forward,
    2.5x that backward."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    h, g, s, d = 32, 8, 8192, 128
    q = torch.randn(1, h, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(1, g, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(1, g, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    grad = torch.randn(1, h, s, d, device="cuda", dtype=torch.bfloat16)

    def step():
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            torch.autograd.grad(out, (q, k, v), grad)
    return step, 3.5 * 4.0 * h * s * s * d / 2


def gemm_fn(dtype):
    if dtype == "attention":
        return attention_fn()
    if dtype == "bf16-llama8b-fc1":
        a = torch.randn(8192, 4096, device="cuda").to(torch.bfloat16)
        b = torch.randn(4096, 28672, device="cuda").to(torch.bfloat16)
        out = torch.empty(8192, 28672, device="cuda", dtype=torch.bfloat16)
        return (lambda: torch.mm(a, b, out=out)), 2.0 * 8192 * 4096 * 28672
    a = torch.randn(N, N, device="cuda").to(torch.bfloat16)
    b = torch.randn(N, N, device="cuda").to(torch.bfloat16)
    if dtype == "bf16":
        out = torch.empty(N, N, device="cuda", dtype=torch.bfloat16)
        return (lambda: torch.mm(a, b, out=out)), 2.0 * N ** 3
    a8 = a.to(torch.float8_e4m3fn)
    b8 = b.t().contiguous().to(torch.float8_e4m3fn).t()  # column-major, as _scaled_mm takes B
    one = torch.ones((), device="cuda")
    return ((lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one,
                                      out_dtype=torch.bfloat16)), 2.0 * N ** 3)


def run(dtype, seconds, window, sampler):
    fn, flops = gemm_fn(dtype)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    batches = []  # (end time, TFLOP/s)
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        for _ in range(BATCH):
            fn()
        end.record()
        end.synchronize()
        batches.append((time.perf_counter(), flops * BATCH / begin.elapsed_time(end) / 1e9))
    print(f"{dtype}: random normal operands, {seconds} s back to back", flush=True)
    t = start
    while t < start + seconds - 1e-9:
        rates = [r for (e, r) in batches if t <= e < t + window]
        probe = [s for s in sampler.samples if t <= s[0] < t + window]
        if rates and probe:
            print(f"  {t - start:5.1f}-{t - start + window:5.1f} s  "
                  f"{statistics.median(rates):7.1f} TFLOP/s  "
                  f"SM {statistics.median(p[1] for p in probe):6.0f} MHz  "
                  f"{statistics.median(p[2] for p in probe):5.0f} W  "
                  f"{statistics.median(p[3] for p in probe):3.0f} C", flush=True)
        t += window


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--window", type=float, default=5)
    parser.add_argument("--kinds", default="bf16,fp8",
                        help="bf16, fp8 (8192^3), bf16-llama8b-fc1, attention (cuDNN fwd+bwd)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("gpu_clock_probe.py: no CUDA device; skipped")
        sys.exit(77)
    sampler = Sampler()
    sampler.start()
    print(f"# {torch.cuda.get_device_name()} torch {torch.__version__}", flush=True)
    for dtype in args.kinds.split(","):
        run(dtype, args.seconds, args.window, sampler)
    sampler.stop.set()


if __name__ == "__main__":
    main()
