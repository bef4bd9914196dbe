#!/usr/bin/env python3
"""Time causal attention forward and backward on a GPU through PyTorch's SDPA backends.

For a few training shapes (Qwen3-30B-A3B, Llama-3.1-8B and -70B per TP rank, DeepSeek-V3's
multi-latent attention with 192-wide query/key heads and 128-wide value heads at TP1 and TP2;
bf16, causal),
GPU time of F.scaled_dot_product_attention's forward and of its backward, with the flash
(FlashAttention-2 in PyTorch) and the cuDNN backend (the fused attention Transformer Engine
runs on Hopper), each captured in a CUDA graph and replayed, median of --iters. Grouped-query
heads are given to SDPA with enable_gqa. Set against `project estimate attention`.

  tools/gpu_attention_probe.py

Needs PyTorch with CUDA and a GPU; exits 77 without them.
"""
import argparse
import sys

try:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from gpu_timing import graph_ms, require_cuda
except ImportError:
    print("gpu_attention_probe.py: PyTorch is not installed; skipped")
    sys.exit(77)

# name: batch, query heads, key/value heads, sequence, query/key head dim, value head dim
SHAPES = {
    "qwen3-30b-a3b (32/4, s4096)": (1, 32, 4, 4096, 128, 128),
    "llama3.1-8b (32/8, s8192)": (1, 32, 8, 8192, 128, 128),
    "llama3.1-70b tp8 (8/1, s8192)": (1, 8, 1, 8192, 128, 128),
    "deepseek-v3 mla (128, s4096, d192/128)": (1, 128, 128, 4096, 192, 128),
    "deepseek-v3 mla tp2 (64, s4096, d192/128)": (1, 64, 64, 4096, 192, 128),
}
BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}


def probe(b, hq, hkv, s, d, dv, backend, iters):
    gen = torch.Generator(device="cuda").manual_seed(0)
    def rand(h, width):
        return torch.randn(b, h, s, width, device="cuda", generator=gen, dtype=torch.bfloat16)
    q = rand(hq, d).requires_grad_(True)
    k = rand(hkv, d).requires_grad_(True)
    v = rand(hkv, dv).requires_grad_(True)
    grad = rand(hq, dv)
    with sdpa_kernel([backend]):
        def fwd():
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=hq != hkv)
        fwd_ms = graph_ms(fwd, iters)
        def fwd_bwd():
            out = fwd()
            return torch.autograd.grad(out, (q, k, v), grad)
        both_ms = graph_ms(fwd_bwd, iters)
    flops = 2.0 * b * hq * s * s * (d + dv) / 2  # causal forward: QKᵀ and PV, half the scores
    return {"fwd_ms": fwd_ms, "bwd_ms": both_ms - fwd_ms,
            "fwd_tflops": flops / fwd_ms / 1e9, "bwd_tflops": 2.5 * flops / (both_ms - fwd_ms) / 1e9}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=20)
    args = parser.parse_args()
    require_cuda("gpu_attention_probe.py")
    print(f"# {torch.cuda.get_device_name()} torch {torch.__version__}, bf16 causal, ms", flush=True)
    for name, (b, hq, hkv, s, d, dv) in SHAPES.items():
        for label, backend in BACKENDS.items():
            try:
                r = probe(b, hq, hkv, s, d, dv, backend, args.iters)
                print(f"{name:32s} {label:6s} fwd {r['fwd_ms']:.3f} ({r['fwd_tflops']:.0f} TFLOP/s)"
                      f"  bwd {r['bwd_ms']:.3f} ({r['bwd_tflops']:.0f} TFLOP/s)", flush=True)
            except Exception as err:  # noqa: BLE001 - report and go on
                print(f"{name:32s} {label:6s} ERROR {repr(err)[:200]}", flush=True)


if __name__ == "__main__":
    main()
