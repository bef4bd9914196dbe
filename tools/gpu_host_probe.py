#!/usr/bin/env python3
"""Measure what the host CPU spends to issue one framework op, the figure behind a profile's
`host_op_dispatch_us` (projection/host_overhead.h).

Each op is called N times in a row from Python and the CPU time of the loop is taken without a
synchronisation inside it, so the figure is the cost of issuing, not of running (the GPU work
queues behind). Ops: torch.nn.Linear forward at hidden 2048 and 8192 tokens in bf16 (the shape
of TransformerEngine issue #2053, whose 13.48 us on a Xeon 8480C the profiles hold), the same
with autograd recording, an element-wise add and SiLU, index_select, SDPA (with autograd
recording), the backward of SDPA, and the backward of a
chain of Linear layers (CPU time of loss.backward() per layer, two GEMMs each) or of SiLUs. Also the cost of
a device-to-host copy of 16 integers on an idle GPU (a MoE dispatcher's token counts).

  tools/gpu_host_probe.py [--n 200]

Needs PyTorch with CUDA and a GPU; exits 77 without them.
"""
import argparse
import platform
import statistics
import sys
import time

try:
    import torch
    from gpu_timing import require_cuda
except ImportError:
    print("gpu_host_probe.py: PyTorch is not installed; skipped")
    sys.exit(77)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def issue_us(call, n, repeats):
    """Median over `repeats` of the CPU time per call of `n` calls issued back to back."""
    samples = []
    for _ in range(repeats + 1):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            call()
        samples.append((time.perf_counter() - t0) / n * 1e6)
    torch.cuda.synchronize()
    return statistics.median(samples[1:])


def backward_us_per_layer(layers, x, repeats, has_weights=True):
    samples = []
    for _ in range(repeats + 1):
        y = x
        for layer in layers:
            y = layer(y)
        loss = y.float().square().mean()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        loss.backward()
        samples.append((time.perf_counter() - t0) / len(layers) * 1e6)
        torch.cuda.synchronize()
        for layer in layers if has_weights else []:
            layer.weight.grad = None
    return statistics.median(samples[1:])


class Sdpa(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.scaled_dot_product_attention(x, x, x, is_causal=True)


def d2h_us(repeats):
    counts = torch.arange(16, device="cuda", dtype=torch.int64)
    samples = []
    for _ in range(repeats + 1):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        counts.tolist()
        samples.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(samples[1:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    require_cuda("gpu_host_probe.py")
    torch.manual_seed(0)
    dev, bf16 = "cuda", torch.bfloat16
    print(f"# {torch.cuda.get_device_name()} torch {torch.__version__}; host CPU: {cpu_model()}")
    linear = torch.nn.Linear(2048, 2048, bias=False, device=dev, dtype=bf16)
    x = torch.randn(8192, 2048, device=dev, dtype=bf16)
    small = torch.randn(16, 2048, device=dev, dtype=bf16)
    index = torch.randint(0, 8192, (8192,), device=dev)
    with torch.no_grad():
        rows = [
            ("nn.Linear forward, 8192x2048x2048 bf16, no grad", lambda: linear(x)),
            ("nn.Linear forward, 16x2048x2048 bf16, no grad", lambda: linear(small)),
            ("torch.add, 8192x2048 bf16", lambda: torch.add(x, x)),
            ("F.silu, 8192x2048 bf16", lambda: torch.nn.functional.silu(x)),
            ("index_select, 8192 rows of 2048 bf16", lambda: x.index_select(0, index)),
        ]
        results = [(name, issue_us(call, args.n, args.repeats)) for name, call in rows]
    xg = x.detach().requires_grad_(True)
    results.append(("nn.Linear forward, 8192x2048x2048 bf16, autograd recording",
                    issue_us(lambda: linear(xg), args.n, args.repeats)))
    results.append(("torch.add, 8192x2048 bf16, autograd recording",
                    issue_us(lambda: torch.add(xg, xg), args.n, args.repeats)))
    results.append(("F.silu, 8192x2048 bf16, autograd recording",
                    issue_us(lambda: torch.nn.functional.silu(xg), args.n, args.repeats)))
    q = torch.randn(1, 32, 4096, 128, device=dev, dtype=bf16, requires_grad=True)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    results.append(("SDPA forward, b1 h32 s4096 d128 causal bf16, autograd recording",
                    issue_us(lambda: sdpa(q, q, q, is_causal=True), 20, args.repeats)))
    layers = [torch.nn.Linear(2048, 2048, bias=False, device=dev, dtype=bf16) for _ in range(48)]
    results.append(("backward of a Linear chain at 8192 tokens, per layer (dgrad + wgrad GEMMs)",
                    backward_us_per_layer(layers, xg, args.repeats)))
    smallg = small.detach().requires_grad_(True)
    results.append(("backward of a Linear chain at 16 tokens, per layer (dgrad + wgrad GEMMs)",
                    backward_us_per_layer(layers, smallg, args.repeats)))
    silus = [torch.nn.SiLU() for _ in range(48)]
    results.append(("backward of a SiLU chain at 8192x2048, per op",
                    backward_us_per_layer(silus, xg, args.repeats, has_weights=False)))
    attention = [Sdpa() for _ in range(8)]
    results.append(("backward of an SDPA chain (b1 h32 s4096 d128 causal), per op",
                    backward_us_per_layer(attention, q, args.repeats, has_weights=False)))
    results.append(("16 int64 token counts to the host (.tolist()) on an idle GPU", d2h_us(50)))
    for name, us in results:
        print(f"{name}: {us:.2f} us")


if __name__ == "__main__":
    main()
