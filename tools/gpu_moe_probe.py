#!/usr/bin/env python3
"""Time one dropless MoE layer's forward and backward on a GPU, kernel by kernel.

The layer does what Megatron-Core's dropless path does, in plain PyTorch:
  router     logits = x @ W_r^T (bf16), softmax in fp32, top-k, the top-k probabilities
             renormalised (Qwen3), the load-balancing auxiliary loss E * sum(f_i * P_i)
  permute    the (token, expert) pairs sorted by expert (stable argsort), tokens gathered
  experts    fc1 (gate and up fused, 2F wide), SwiGLU, fc2, in one of two ways:
               sequential  one GEMM per expert over its tokens; the per-expert counts go to
                           the host first (as Transformer Engine's GroupedLinear takes
                           m_splits, and Megatron's SequentialMLP splits)
               grouped     torch._grouped_mm over groups padded to 16 rows (no host sync)
  unpermute  the outputs scaled by their probabilities and summed back per token (index_add)
and the backward of all of it by autograd.

For each layer it reports, per forward+backward:
  eager_ms       wall time of the eager step (host launches included), median
  graph_ms       the same step replayed as a CUDA graph (grouped only: no host sync), median
  kernel_ms      the sum of the GPU kernels' durations (torch.profiler), and the top kernels
so the GPU-side time can be set against `project --show-ops` for the same shapes:

  project --model qwen3-30b-a3b --gpu-arch h200-sxm --num-gpus 1 --seq-len 4096 \\
          --global-batch 1 --show-ops

Needs PyTorch with CUDA and a GPU; exits 77 without them. Writes JSON to --out if given.
"""
import argparse
import json
import sys

try:
    import torch
    import torch.nn.functional as F
    from gpu_timing import graph_ms, median_ms, wall_ms
except ImportError:
    print("gpu_moe_probe.py: PyTorch is not installed; skipped")
    sys.exit(77)

ALIGN = 16  # rows per group torch._grouped_mm is fed in (torchtitan pads bf16 groups likewise)

LAYERS = {
    # name: tokens, hidden, experts, top-k, expert ffn
    "qwen3-30b-a3b": (4096, 2048, 128, 8, 768),
    "16-experts-x-256": (4096, 2048, 16, 1, 768),  # Qwen3-30B-A3B's experts, 256 rows each
    "qwen3-235b-a22b": (4096, 4096, 128, 8, 1536),
}


def route(x, w_router, top_k):
    logits = x @ w_router.t()
    scores = torch.softmax(logits.float(), dim=-1)
    probs, idx = torch.topk(scores, top_k, dim=-1)
    probs = probs / probs.sum(dim=-1, keepdim=True)
    experts = w_router.shape[0]
    counts = torch.zeros(experts, device=x.device, dtype=torch.float32)
    counts.scatter_add_(0, idx.reshape(-1), torch.ones(idx.numel(), device=x.device))
    fraction = counts / idx.numel()
    aux = experts * (fraction * scores.mean(dim=0)).sum()
    return probs, idx, aux


def permutation(idx, experts, top_k, align):
    flat = idx.reshape(-1)
    order = torch.argsort(flat, stable=True)
    sorted_expert = flat[order]
    counts = torch.zeros(experts, device=idx.device, dtype=torch.int64)
    counts.scatter_add_(0, flat, torch.ones_like(flat))
    starts = torch.cumsum(counts, 0) - counts
    padded = (counts + align - 1) // align * align
    padded_starts = torch.cumsum(padded, 0) - padded
    rank_in_expert = torch.arange(flat.numel(), device=idx.device) - starts[sorted_expert]
    dest = padded_starts[sorted_expert] + rank_in_expert
    return order, order // top_k, dest, counts, torch.cumsum(padded, 0).to(torch.int32)


def swiglu(h):
    gate, up = h.chunk(2, dim=-1)
    return F.silu(gate) * up


def moe_grouped(x, w_router, w1, w2, top_k):
    probs, idx, aux = route(x, w_router, top_k)
    experts, hidden = w1.shape[0], x.shape[1]
    order, token, dest, _, offs = permutation(idx, experts, top_k, ALIGN)
    rows = idx.numel() + experts * (ALIGN - 1)
    buf = x.new_zeros(rows, hidden).index_copy(0, dest, x.index_select(0, token))
    h = torch._grouped_mm(buf, w1.transpose(-2, -1), offs=offs)
    out = torch._grouped_mm(swiglu(h), w2.transpose(-2, -1), offs=offs)
    weighted = out.index_select(0, dest) * probs.reshape(-1)[order].unsqueeze(-1).to(out.dtype)
    y = torch.zeros_like(x).index_add(0, token, weighted)
    return y, aux


def moe_sequential(x, w_router, w1, w2, top_k):
    probs, idx, aux = route(x, w_router, top_k)
    experts = w1.shape[0]
    order, token, _, counts, _ = permutation(idx, experts, top_k, 1)
    permuted = x.index_select(0, token)
    splits = counts.tolist()  # device-to-host sync, as the dropless dispatcher's m_splits
    outs = []
    # unbind, not w1[e]: autograd's backward of w1[e] adds a zero-filled gradient of all of w1
    # per expert, a cost of this script and not of the layer
    for chunk, w1_e, w2_e in zip(torch.split(permuted, splits), w1.unbind(0), w2.unbind(0)):
        outs.append(swiglu(chunk @ w1_e.t()) @ w2_e.t())
    out = torch.cat(outs)
    weighted = out * probs.reshape(-1)[order].unsqueeze(-1).to(out.dtype)
    y = torch.zeros_like(x).index_add(0, token, weighted)
    return y, aux


def make_inputs(tokens, hidden, experts, ffn):
    gen = torch.Generator(device="cuda").manual_seed(0)
    def randn(*shape, scale=1.0):
        t = torch.randn(*shape, device="cuda", generator=gen, dtype=torch.float32) * scale
        return t.to(torch.bfloat16).requires_grad_(True)
    x = randn(tokens, hidden)
    w_router = randn(experts, hidden, scale=hidden ** -0.5)
    w1 = randn(experts, 2 * ffn, hidden, scale=hidden ** -0.5)
    w2 = randn(experts, hidden, ffn, scale=ffn ** -0.5)
    grad_y = randn(tokens, hidden).detach()
    return x, w_router, w1, w2, grad_y


def step_fn(layer, params, grad_y, top_k):
    def step():
        y, aux = layer(*params, top_k)
        return torch.autograd.grad([y, aux], params, [grad_y, torch.ones_like(aux)])
    return step


def kernel_table(step, iters, top):
    from torch.profiler import profile, ProfilerActivity
    step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            step()
        torch.cuda.synchronize()
    rows = []
    for evt in prof.key_averages():
        total = getattr(evt, "device_time_total", None)
        if total is None:
            total = getattr(evt, "cuda_time_total", 0)
        if total <= 0 or evt.key.startswith("ProfilerStep"):
            continue
        rows.append({"kernel": evt.key[:110], "calls": evt.count / iters, "us": total / iters})
    rows.sort(key=lambda r: -r["us"])
    return sum(r["us"] for r in rows) / 1e3, rows[:top]


def max_difference(name):
    """The grouped and sequential layers compute the same y and gradients (a check of the
    padding and permutation), as the largest relative difference over them."""
    tokens, hidden, experts, top_k, ffn = LAYERS[name]
    x, w_router, w1, w2, grad_y = make_inputs(tokens, hidden, experts, ffn)
    params = [x, w_router, w1, w2]
    a = step_fn(moe_grouped, params, grad_y, top_k)()
    b = step_fn(moe_sequential, params, grad_y, top_k)()
    return max(((p - q).float().norm() / q.float().norm().clamp_min(1e-30)).item()
               for p, q in zip(a, b))


def probe(name, variant, iters):
    tokens, hidden, experts, top_k, ffn = LAYERS[name]
    x, w_router, w1, w2, grad_y = make_inputs(tokens, hidden, experts, ffn)
    params = [x, w_router, w1, w2]
    layer = moe_grouped if variant == "grouped" else moe_sequential
    step = step_fn(layer, params, grad_y, top_k)
    result = {"layer": name, "variant": variant, "tokens": tokens, "hidden": hidden,
              "experts": experts, "top_k": top_k, "ffn": ffn,
              "eager_ms": wall_ms(step, iters)}
    if variant == "grouped":
        try:
            result["graph_ms"] = graph_ms(step, iters)
        except Exception as err:  # noqa: BLE001 - report and go on
            result["graph_error"] = str(err)[:200]
    result["kernel_ms"], result["top_kernels"] = kernel_table(step, 5, 25)
    return result


def permutation_ops(name, iters):
    """The data movement of permute and unpermute, one primitive at a time (CUDA events,
    median): the bytes each reads and writes once and the rate that gives."""
    tokens, hidden, experts, top_k, _ = LAYERS[name]
    pairs = tokens * top_k
    gen = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(tokens, hidden, device="cuda", generator=gen).to(torch.bfloat16)
    rows = torch.randn(pairs, hidden, device="cuda", generator=gen).to(torch.bfloat16)
    token = torch.randint(0, tokens, (pairs,), device="cuda", generator=gen)
    unique = torch.randperm(pairs, device="cuda", generator=gen)
    probs = torch.rand(tokens, top_k, device="cuda", generator=gen)
    row_bytes = hidden * 2
    ops = {
        # name: (function, bytes moved once)
        "gather x[token] (index_select)": (lambda: x.index_select(0, token), 2 * pairs * row_bytes),
        "scatter rows to unique rows (index_copy)": (
            lambda: rows.index_copy(0, unique, rows), 3 * pairs * row_bytes),
        "scatter-add rows into tokens (index_add, 8-way)": (
            lambda: torch.zeros_like(x).index_add(0, token, rows),
            pairs * row_bytes + 2 * tokens * row_bytes),
        "scatter-add rows into tokens (scatter_add_)": (
            lambda: torch.zeros_like(x).scatter_add_(
                0, token.unsqueeze(1).expand(-1, hidden), rows),
            pairs * row_bytes + 2 * tokens * row_bytes),
        "gather-reduce rows per token (index_select, weighted sum)": (
            lambda: (rows.index_select(0, unique).view(tokens, top_k, hidden)
                     * probs.unsqueeze(-1).to(torch.bfloat16)).sum(1),
            pairs * row_bytes + tokens * row_bytes),
        "copy rows (clone)": (lambda: rows.clone(), 2 * pairs * row_bytes),
    }
    out = []
    for label, (fn, nbytes) in ops.items():
        ms = median_ms(fn, iters)
        out.append({"op": label, "us": ms * 1e3, "bytes": nbytes, "GBps": nbytes / ms / 1e6})
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", default=",".join(LAYERS))
    parser.add_argument("--variants", default="grouped,sequential")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--out")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("gpu_moe_probe.py: no CUDA device; skipped")
        sys.exit(77)
    print(f"# {torch.cuda.get_device_name()} torch {torch.__version__}", flush=True)
    results = []
    try:
        print(f"grouped vs sequential gradients, largest relative difference: "
              f"{max_difference(args.layers.split(',')[0]):.2e}", flush=True)
    except Exception as err:  # noqa: BLE001
        print(f"grouped vs sequential check failed: {err!r}"[:300], flush=True)
    for name in args.layers.split(","):
        for variant in args.variants.split(","):
            try:
                r = probe(name, variant, args.iters)
            except Exception as err:  # noqa: BLE001 - one layer's failure must not hide the rest
                r = {"layer": name, "variant": variant, "error": repr(err)[:300]}
            results.append(r)
            if "error" in r:
                print(f"{name} {variant}: ERROR {r['error']}", flush=True)
                continue
            graph = f"{r['graph_ms']:.3f}" if "graph_ms" in r else r.get("graph_error", "-")
            print(f"{name} {variant}: eager {r['eager_ms']:.3f} ms, graph {graph}, "
                  f"kernels {r['kernel_ms']:.3f} ms", flush=True)
            for k in r["top_kernels"]:
                print(f"    {k['us']:9.1f} us  x{k['calls']:6.1f}  {k['kernel']}")
            torch.cuda.empty_cache()
    for name in args.layers.split(","):
        if LAYERS[name][3] == 1:
            continue
        ops = permutation_ops(name, args.iters)
        results.append({"layer": name, "permutation_ops": ops})
        print(f"{name}: permutation primitives ({LAYERS[name][0] * LAYERS[name][3]} rows of "
              f"{LAYERS[name][1]} bf16)", flush=True)
        for o in ops:
            print(f"    {o['us']:9.1f} us  {o['GBps']:7.0f} GB/s  {o['op']}", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
