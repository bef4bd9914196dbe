#!/usr/bin/env python3
"""Trace the eager PyTorch kernels of a Llama-style layer's elementwise work, op by op.

Runs RMSNorm, SwiGLU, torchtitan's attention glue (complex-number RoPE, repeat_kv, the
transposes around F.scaled_dot_product_attention), three linear layers sharing an input and
MPT's fused Wqkv chunked into Q, K and V for an attention kernel, forward and backward, under
a TorchDispatchMode on the CPU. Every dispatched op that is not a view is taken as one GPU
kernel that reads its tensor inputs and writes its outputs (broadcast dimensions counted
once). The attention kernel itself is a stand-in whose own traffic is not
counted; neither is the cos/sin table (seq x head_dim/2 complex64, L2-resident on a GPU).

This is where the bytes per element and kernel counts of profiler_internal.h's EagerRmsNorm,
EagerSwiGlu and EagerRope come from, and the copies of attention_profiler.cc's repeat_kv,
sdpa_layout and output_grad_cat ops.

  tools/eager_bytes.py                   print the traced bytes per element / per token
  tools/eager_bytes.py --check BINARY    compare them with `project --show-ops --format json`
                                         on a small Llama-style model (exit 1 on a mismatch)

Needs PyTorch (Debian: apt-get install python3-torch; run it with /usr/bin/python3). Without it
the script exits 77, which ctest reads as a skip.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

try:
    import torch
    import torch.nn.functional as F
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten
except ImportError:
    print("eager_bytes.py: PyTorch is not installed (apt-get install python3-torch); skipped")
    sys.exit(77)

BF16 = torch.bfloat16
# Ops that launch no kernel: metadata checks and allocation without a fill.
NO_KERNEL = {"is_same_size", "detach", "empty", "empty_like", "new_empty", "empty_strided",
             "lift_fresh", "_reshape_alias", "view", "_unsafe_view"}


def touched_bytes(t):
    n = 1
    for size, stride in zip(t.shape, t.stride()):
        if stride != 0:
            n *= size
    return n * t.element_size()


class KernelCounter(TorchDispatchMode):
    """Records (op, bytes read, bytes written) for every non-view op."""

    def __init__(self, ignore):
        super().__init__()
        self.ops = []
        self.ignore = ignore  # predicate: tensors whose bytes are not counted (the cos/sin table)
        self.paused = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if self.paused:
            return out
        ins = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        outs = [o for o in tree_flatten(out)[0] if isinstance(o, torch.Tensor)]
        in_storages = {a.storage().data_ptr() for a in ins}
        is_view = outs and all(o.storage().data_ptr() in in_storages for o in outs)
        name = func.overloadpacket.__name__
        if is_view or name in NO_KERNEL:
            return out
        read = sum(touched_bytes(a) for a in ins if not self.ignore(a))
        written = sum(touched_bytes(o) for o in outs if not self.ignore(o))
        self.ops.append((name, read, written))
        return out


def trace(fn, inputs, ignore=lambda t: False, counter_ref=None):
    """Kernels of fn(*inputs) and of its backward from random output gradients."""
    fwd = KernelCounter(ignore)
    if counter_ref is not None:
        counter_ref.append(fwd)
    with fwd:
        out = fn(*inputs)
    outs = out if isinstance(out, tuple) else (out,)
    grads = [torch.randn_like(o) for o in outs]
    bwd = KernelCounter(ignore)
    if counter_ref is not None:
        counter_ref[0] = bwd
    with bwd:
        torch.autograd.backward(outs, grads)
    return fwd.ops, bwd.ops


def total(ops):
    return sum(r + w for _, r, w in ops), len(ops)


def rms_norm(tokens, hidden):
    w = torch.ones(hidden, dtype=BF16, requires_grad=True)

    def f(x):  # torchtitan's RMSNorm (and ATen's composite rms_norm)
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)
        return y.type_as(x) * w

    x = torch.randn(tokens, hidden, dtype=BF16, requires_grad=True)
    return trace(f, [x])


def swiglu(tokens, ffn):
    g = torch.randn(tokens, ffn, dtype=BF16, requires_grad=True)
    u = torch.randn(tokens, ffn, dtype=BF16, requires_grad=True)
    return trace(lambda g, u: F.silu(g) * u, [g, u])


def linears_on_one_input(tokens, hidden, outs):
    x = torch.randn(tokens, hidden, dtype=BF16, requires_grad=True)
    ws = [torch.randn(o, hidden, dtype=BF16, requires_grad=True) for o in outs]
    fwd, bwd = trace(lambda x: tuple(F.linear(x, w) for w in ws), [x])
    return [op for op in fwd if op[0] != "mm"], [op for op in bwd if op[0] != "mm"]


def attention_glue(seq, heads, kv_heads, head_dim):
    """torchtitan's Attention.forward between the projections and wo, SDPA stubbed out."""
    counters = []

    class Sdpa(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v):
            counters[0].paused = True
            o = torch.empty(q.shape, dtype=q.dtype)  # (b, h, s, d), contiguous like flash
            counters[0].paused = False
            ctx.shapes = (q.shape, k.shape, v.shape)
            return o

        @staticmethod
        def backward(ctx, grad):
            counters[0].paused = True
            g = tuple(torch.empty(s, dtype=BF16) for s in ctx.shapes)
            counters[0].paused = False
            return g

    half = head_dim // 2
    freqs = torch.outer(torch.arange(seq).float(),
                        1.0 / (10000.0 ** (torch.arange(0, head_dim, 2)[:half].float() / head_dim)))
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)

    def is_table(t):  # the cos/sin table and its conjugate copies
        return t.is_complex() and t.numel() == freqs_cis.numel()

    def apply_rotary_emb(xq, xk):
        xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
        xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
        fc = freqs_cis.view(1, seq, 1, half)
        xq_out = torch.view_as_real(xq_ * fc).flatten(3)
        xk_out = torch.view_as_real(xk_ * fc).flatten(3)
        return xq_out.type_as(xq), xk_out.type_as(xk)

    def repeat_kv(x, n_rep):
        bs, slen, n_kv, hd = x.shape
        if n_rep == 1:
            return x
        return torch.unsqueeze(x, dim=3).expand(bs, slen, n_kv, n_rep, hd).reshape(
            bs, slen, n_kv * n_rep, hd)

    def glue(xq, xk, xv):
        xq = xq.view(1, seq, heads, head_dim)
        xk = xk.view(1, seq, kv_heads, head_dim)
        xv = xv.view(1, seq, kv_heads, head_dim)
        xq, xk = apply_rotary_emb(xq, xk)
        keys = repeat_kv(xk, heads // kv_heads)
        values = repeat_kv(xv, heads // kv_heads)
        out = Sdpa.apply(xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2))
        return out.transpose(1, 2).contiguous().view(1, seq, -1)

    xq = torch.randn(1, seq, heads * head_dim, dtype=BF16, requires_grad=True)
    xk = torch.randn(1, seq, kv_heads * head_dim, dtype=BF16, requires_grad=True)
    xv = torch.randn(1, seq, kv_heads * head_dim, dtype=BF16, requires_grad=True)
    return trace(glue, [xq, xk, xv], ignore=is_table, counter_ref=counters)


def fused_qkv_split(seq, heads, head_dim):
    """MPT's attention (llm-foundry, attn_impl triton): qkv = Wqkv(x); qkv.chunk(3) into the
    kernel's Q, K, V, whose backward (flash_attn_triton's FlashAttnFunc) allocates dQ, dK and dV
    apart. The GEMM and the kernel are stand-ins: only autograd's glue is counted."""
    counters = []

    class Kernel(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v):
            counters[0].paused = True
            o = torch.empty(q.shape, dtype=q.dtype)
            counters[0].paused = False
            return o

        @staticmethod
        def backward(ctx, grad):
            counters[0].paused = True
            g = tuple(torch.empty(grad.shape, dtype=BF16) for _ in range(3))
            counters[0].paused = False
            return g

    def attn(qkv):
        q, k, v = qkv.chunk(3, dim=2)
        shape = (1, seq, heads, head_dim)
        return Kernel.apply(q.reshape(shape), k.reshape(shape), v.reshape(shape))

    qkv = torch.randn(1, seq, 3 * heads * head_dim, dtype=BF16, requires_grad=True)
    return trace(attn, [qkv], counter_ref=counters)


def measure(seq, hidden, heads, kv_heads, ffn):
    head_dim = hidden // heads
    tokens = seq
    out = {}
    fwd, bwd = rms_norm(tokens, hidden)
    out["norm"] = (total(fwd), total(bwd), tokens * hidden)
    fwd, bwd = swiglu(tokens, ffn)
    out["swiglu"] = (total(fwd), total(bwd), tokens * ffn)
    fwd, bwd = linears_on_one_input(tokens, hidden, [ffn, ffn])
    out["gate_up_grad_sum"] = (total(fwd), total(bwd), tokens * hidden)
    kv = kv_heads * head_dim
    fwd, bwd = linears_on_one_input(tokens, hidden, [hidden, kv, kv])
    out["qkv_grad_sum"] = (total(fwd), total(bwd), tokens * hidden)
    fwd, bwd = attention_glue(seq, heads, kv_heads, head_dim)
    out["glue_fwd"] = fwd
    out["glue_bwd"] = bwd
    fwd, bwd = fused_qkv_split(seq, heads, head_dim)
    out["qkv_split"] = (total(fwd), total(bwd), tokens * 3 * hidden)
    return out


def print_trace(args):
    for heads, kv_heads in ((args.heads, args.heads), (args.heads, args.kv_heads)):
        m = measure(args.seq, args.hidden, heads, kv_heads, args.ffn)
        print(f"seq {args.seq}, hidden {args.hidden}, heads {heads}/{kv_heads}, ffn {args.ffn}")
        for key in ("norm", "swiglu", "gate_up_grad_sum", "qkv_grad_sum", "qkv_split"):
            (fb, fk), (bb, bk), n = m[key]
            print(f"  {key:18} forward {fb / n:7.3f} B/elem in {fk:2d} kernels, "
                  f"backward {bb / n:7.3f} B/elem in {bk:2d} kernels")
        for tag in ("glue_fwd", "glue_bwd"):
            print(f"  attention glue {tag[5:]}: per token")
            for name, r, w in m[tag]:
                print(f"    {name:12} read {r / args.seq:9.1f}  write {w / args.seq:9.1f}")


def project_ops(binary, seq, hidden, heads, kv_heads, ffn, mpt=False):
    """Bytes per (module, op, phase) of one dense layer: a Llama-style model on torchtitan, or
    with mpt=True an MPT-style one (GELU, LayerNorm, ALiBi, fused Wqkv) on llm-foundry."""
    model = {"name": "eager-check", "source": "tools/eager_bytes.py", "num_layers": 2,
             "hidden_size": hidden, "ffn_hidden_size": ffn, "num_attention_heads": heads,
             "num_kv_heads": kv_heads, "vocab_size": 1024, "mlp": "swiglu", "norm": "rmsnorm",
             "tied_embeddings": False, "qk_norm": False, "attention_bias": False,
             "linear_bias": False}
    if mpt:
        model.update(mlp="gelu", norm="layernorm", position_embedding="alibi")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model.json")
        with open(path, "w") as f:
            json.dump(model, f)
        r = subprocess.run([binary, "--model", path, "--gpu-arch", "h100-sxm", "--num-gpus", "8",
                            "--fsdp", "--stack", "llm-foundry" if mpt else "torchtitan",
                            "--seq-len", str(seq),
                            "--micro-batch", "1", "--global-batch", "8", "--show-ops",
                            "--format", "json"], capture_output=True, text=True, check=True)
    ops = {}
    for op in json.loads(r.stdout)["ops"]:
        if op["group"].startswith("dense layer"):
            ops.setdefault((op["module"], op["op"], op["phase"]), 0.0)
            ops[(op["module"], op["op"], op["phase"])] += op["bytes"]
    return ops


def check(args):
    failures = 0

    def compare(what, traced, projected):
        nonlocal failures
        # 0.5%: the profiler leaves out RMSNorm's per-row statistics (a few fp32 values a row)
        # and its weight vector, 0.15% of the norm's bytes at hidden 512, less when wider.
        ok = abs(traced - projected) <= 5e-3 * max(abs(traced), 1.0)
        failures += not ok
        print(f"  {'ok ' if ok else 'BAD'} {what:40} traced {traced:14.0f}  project {projected:14.0f}")

    for heads, kv_heads in ((args.heads, args.heads), (args.heads, args.kv_heads)):
        print(f"heads {heads}/{kv_heads}:")
        m = measure(args.seq, args.hidden, heads, kv_heads, args.ffn)
        p = project_ops(args.check, args.seq, args.hidden, heads, kv_heads, args.ffn)
        (nf, _), (nb, _), _ = m["norm"]
        compare("input_norm forward", nf, p[("norms", "input_norm", "forward")])
        compare("input_norm backward", nb, p[("norms", "input_norm", "backward_dgrad")])
        (sf, _), (sb, _), _ = m["swiglu"]
        compare("swiglu forward", sf, p[("mlp", "swiglu", "forward")])
        compare("swiglu backward", sb, p[("mlp", "swiglu", "backward_dgrad")])
        (_, _), (gb, _), _ = m["gate_up_grad_sum"]
        compare("mlp input_grad_sum backward", gb, p[("mlp", "input_grad_sum", "backward_dgrad")])
        (_, _), (qb, _), _ = m["qkv_grad_sum"]
        compare("attention input_grad_sum backward", qb,
                p[("attention", "input_grad_sum", "backward_dgrad")])
        glue_fwd, _ = total(m["glue_fwd"])
        glue_bwd, _ = total(m["glue_bwd"])
        names = ("rope", "repeat_kv", "sdpa_layout")
        compare("rope + repeat_kv + sdpa_layout forward", glue_fwd,
                sum(p.get(("attention", n, "forward"), 0.0) for n in names))
        compare("rope + repeat_kv + sdpa_layout backward", glue_bwd,
                sum(p.get(("attention", n, "backward_dgrad"), 0.0) for n in names))
    print(f"MPT-style heads {args.heads}/{args.heads} on llm-foundry:")
    m = measure(args.seq, args.hidden, args.heads, args.heads, args.ffn)
    p = project_ops(args.check, args.seq, args.hidden, args.heads, args.heads, args.ffn, mpt=True)
    (_, _), (cb, _), _ = m["qkv_split"]
    compare("attention output_grad_cat backward", cb,
            p.get(("attention", "output_grad_cat", "backward_dgrad"), 0.0))
    print("all eager byte counts match" if failures == 0 else f"{failures} mismatches")
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--ffn", type=int, default=1024)
    ap.add_argument("--check", metavar="BINARY", help="the project binary to compare with")
    args = ap.parse_args()
    torch.manual_seed(0)
    if args.check:
        return check(args)
    print_trace(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
