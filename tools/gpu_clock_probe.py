#!/usr/bin/env python3
"""Sustained GEMM throughput and SM clock of a GPU under continuous matrix load.

Runs back-to-back 8192^3 GEMMs on random normal operands (bf16, then FP8 with per-tensor scales
through torch._scaled_mm) for --seconds each, and reports per window of --window seconds the
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


def gemm_fn(dtype):
    a = torch.randn(N, N, device="cuda").to(torch.bfloat16)
    b = torch.randn(N, N, device="cuda").to(torch.bfloat16)
    if dtype == "bf16":
        out = torch.empty(N, N, device="cuda", dtype=torch.bfloat16)
        return lambda: torch.mm(a, b, out=out)
    a8 = a.to(torch.float8_e4m3fn)
    b8 = b.t().contiguous().to(torch.float8_e4m3fn).t()  # column-major, as _scaled_mm takes B
    one = torch.ones((), device="cuda")
    return lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)


def run(dtype, seconds, window, sampler):
    fn = gemm_fn(dtype)
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
        batches.append((time.perf_counter(), 2.0 * N ** 3 * BATCH / begin.elapsed_time(end) / 1e9))
    print(f"{dtype}: {N}^3, random normal operands, {seconds} s of back-to-back GEMMs", flush=True)
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
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("gpu_clock_probe.py: no CUDA device; skipped")
        sys.exit(77)
    sampler = Sampler()
    sampler.start()
    print(f"# {torch.cuda.get_device_name()} torch {torch.__version__}", flush=True)
    for dtype in ("bf16", "fp8"):
        run(dtype, args.seconds, args.window, sampler)
    sampler.stop.set()


if __name__ == "__main__":
    main()
