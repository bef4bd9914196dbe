#!/usr/bin/env python3
"""Time a MoE layer's expert GEMMs on a GPU the ways frameworks issue them.

For each expert shape (E local experts of m rows each, the six GEMMs of a SwiGLU expert MLP:
fc1 and fc2 forward, their data gradients and weight gradients), GPU time per set of E GEMMs:
  batched      torch.bmm over the E experts at once (what the projection's batched grouped-GEMM
               model prices)
  per-expert   one torch.mm per expert on one stream (Megatron's SequentialMLP; TE's
               GroupedLinear with one stream)
  4 streams    one torch.mm per expert, expert i on stream i % 4, joined after (Transformer
               Engine's GroupedLinear: multi_stream_cublas_gemm over its 4 compute streams)
each captured in a CUDA graph and replayed (no host time), median of --iters replays after
warm-up, random normal operands. FP8 (--fp8): torch._scaled_mm with per-tensor scales, per
expert (1 and 4 streams) only.

  tools/gpu_grouped_gemm_probe.py [--fp8] [--out FILE.json]

Needs PyTorch with CUDA and a GPU; exits 77 without them.
"""
import argparse
import json
import sys

try:
    import torch
    from gpu_timing import graph_ms
except ImportError:
    print("gpu_grouped_gemm_probe.py: PyTorch is not installed; skipped")
    sys.exit(77)

STREAMS = 4  # transformer_engine/common/util/multi_stream.cpp: num_compute_streams = 4

# name: local experts, rows per expert, hidden, expert ffn (SwiGLU: fc1 is 2·ffn wide). Rows per
# local expert under balanced routing: T_l·k·EP/E for T_l tokens per GPU.
EXPERTS = {
    "qwen3-30b-a3b ep8 512 tok (16 x 256)": (16, 256, 2048, 768),
    "qwen3-30b-a3b ep8 4096 tok (16 x 2048)": (16, 2048, 2048, 768),
    "qwen3-235b-a22b tp2 ep32 (4 x 4096)": (4, 4096, 4096, 1536),
    "deepseek-v3 ep8 (32 x 1024)": (32, 1024, 7168, 2048),
    "deepseek-v3 tp2 ep64 (4 x 4096)": (4, 4096, 7168, 2048),
}


def gemms(m, h, f):
    """The six GEMMs of one expert as (label, M, N, K): out[M, N] = A[M, K] · B[K, N]."""
    return [("fc1 fwd", m, 2 * f, h), ("fc2 fwd", m, h, f),
            ("fc2 dgrad", m, f, h), ("fc1 dgrad", m, h, 2 * f),
            ("fc2 wgrad", f, h, m), ("fc1 wgrad", 2 * f, h, m)]


def graph_time_us(fn, iters):
    return graph_ms(fn, iters) * 1e3


def on_streams(calls, streams):
    """Runs calls[i] on streams[i % len]; the current stream waits for all of them."""
    main = torch.cuda.current_stream()
    for s in streams:
        s.wait_stream(main)
    for i, call in enumerate(calls):
        with torch.cuda.stream(streams[i % len(streams)]):
            call()
    for s in streams:
        main.wait_stream(s)


def probe_shape(e, m, n, k, fp8, iters, streams):
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(e, m, k, device="cuda", generator=gen).to(torch.bfloat16)
    b = torch.randn(e, k, n, device="cuda", generator=gen).to(torch.bfloat16)
    out = torch.empty(e, m, n, device="cuda", dtype=torch.bfloat16)
    row = {}
    if fp8:
        a8 = a.to(torch.float8_e4m3fn)
        # _scaled_mm takes B column-major: the transpose of a row-major [N, K] tensor.
        b8 = b.transpose(1, 2).contiguous().to(torch.float8_e4m3fn)
        one = torch.ones((), device="cuda")
        calls = [lambda i=i: torch._scaled_mm(a8[i], b8[i].t(), scale_a=one, scale_b=one,
                                              out_dtype=torch.bfloat16) for i in range(e)]
    else:
        row["batched"] = graph_time_us(lambda: torch.bmm(a, b, out=out), iters)
        calls = [lambda i=i: torch.mm(a[i], b[i], out=out[i]) for i in range(e)]
    row["per_expert"] = graph_time_us(lambda: [c() for c in calls], iters)
    row["4_streams"] = graph_time_us(lambda: on_streams(calls, streams), iters)
    flops = 2.0 * e * m * n * k
    row["tflops_4_streams"] = flops / row["4_streams"] / 1e6
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fp8", action="store_true")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--only", default="", help="run the expert sets whose name holds this")
    parser.add_argument("--out")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("gpu_grouped_gemm_probe.py: no CUDA device; skipped")
        sys.exit(77)
    streams = [torch.cuda.Stream() for _ in range(STREAMS)]
    dtype = "fp8 per-tensor" if args.fp8 else "bf16"
    print(f"# {torch.cuda.get_device_name()} torch {torch.__version__}, {dtype}, us per set",
          flush=True)
    results = []
    for name, (e, m, h, f) in EXPERTS.items():
        if args.only not in name:
            continue
        for label, mm, n, k in gemms(m, h, f):
            try:
                row = probe_shape(e, mm, n, k, args.fp8, args.iters, streams)
            except Exception as err:  # noqa: BLE001 - report and go on
                row = {"error": repr(err)[:200]}
            row.update({"experts": name, "gemm": label, "e": e, "m": mm, "n": n, "k": k,
                        "dtype": dtype})
            results.append(row)
            cells = "  ".join(f"{key} {row[key]:9.1f}" for key in
                              ("batched", "per_expert", "4_streams", "tflops_4_streams")
                              if key in row)
            print(f"{name:34s} {label:10s} {e}x{mm}x{n}x{k}  {cells or row.get('error')}",
                  flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
