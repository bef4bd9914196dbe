#!/usr/bin/env python3
"""Time a BERT pre-training micro-batch on a GPU, written as the TensorFlow 1 BERT of NVIDIA's
DeepLearningExamples runs it, to set the tool's BERT model against a measurement.

BERT-Large (24 layers, hidden 1024, 16 heads, FFN 4096, vocabulary 30,522) or BERT-Base, post-
LayerNorm encoder layers with separate query, key and value projections, attention as two
batched GEMMs around the scaled, masked softmax with dropout on the probabilities, tanh GELU,
hidden dropout 0.1; the masked-LM head on 20 (seq 128) or 80 (seq 512) gathered positions per
sequence (dense + GELU + LayerNorm, the decoder tied to the word embeddings) and the
next-sentence head. Mixed precision by torch.autocast(fp16) (matmuls in fp16, softmax and
LayerNorm in fp32, as TF's AMP lists keep them), a static loss scale. One micro-batch's forward
and backward, no optimizer step (BERT's LAMB steps once per 256-1024 micro-batches), timed:
  - eager: wall time per micro-batch over --seconds of back-to-back micro-batches;
  - graph: the same captured in a CUDA graph and replayed (GPU time, no host; median of 20);
plus the GPU's kernels grouped by name (torch.profiler) for one eager micro-batch.

  tools/gpu_bert_probe.py [--model large|base] [--batch 64] [--seq 128] [--dtype fp16|bf16]

Needs PyTorch with CUDA and a GPU; exits 77 without them (--device cpu runs a tiny config to
check the script).
"""
import argparse
import math
import sys
import time

try:
    import torch
    import torch.nn.functional as F
    import gpu_timing
except ImportError:
    print("gpu_bert_probe.py: PyTorch is not installed; skipped")
    sys.exit(77)

CONFIGS = {
    "large": dict(layers=24, hidden=1024, heads=16, ffn=4096),
    "base": dict(layers=12, hidden=768, heads=12, ffn=3072),
    "tiny": dict(layers=2, hidden=64, heads=4, ffn=256),
}
VOCAB, TYPES, POSITIONS, DROPOUT = 30522, 2, 512, 0.1


def gelu(x):
    # BERT's tanh approximation (modeling.py gelu)
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


class Layer(torch.nn.Module):
    def __init__(self, h, heads, ffn):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v = (torch.nn.Linear(h, h) for _ in range(3))
        self.o = torch.nn.Linear(h, h)
        self.ln1 = torch.nn.LayerNorm(h, eps=1e-12)
        self.fc1 = torch.nn.Linear(h, ffn)
        self.fc2 = torch.nn.Linear(ffn, h)
        self.ln2 = torch.nn.LayerNorm(h, eps=1e-12)

    def forward(self, x, adder):
        b, s, h = x.shape
        d = h // self.heads

        def split(t):
            return t.view(b, s, self.heads, d).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(d)) + adder
        probs = F.dropout(torch.softmax(scores, dim=-1), DROPOUT, True)
        ctx = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, h)
        x = self.ln1(x + F.dropout(self.o(ctx), DROPOUT, True))
        y = self.fc2(gelu(self.fc1(x)))
        return self.ln2(x + F.dropout(y, DROPOUT, True))


class Bert(torch.nn.Module):
    def __init__(self, layers, hidden, heads, ffn):
        super().__init__()
        self.words = torch.nn.Embedding(VOCAB, hidden)
        self.positions = torch.nn.Embedding(POSITIONS, hidden)
        self.types = torch.nn.Embedding(TYPES, hidden)
        self.ln = torch.nn.LayerNorm(hidden, eps=1e-12)
        self.layers = torch.nn.ModuleList(Layer(hidden, heads, ffn) for _ in range(layers))
        self.pooler = torch.nn.Linear(hidden, hidden)
        self.nsp = torch.nn.Linear(hidden, 2)
        self.transform = torch.nn.Linear(hidden, hidden)
        self.transform_ln = torch.nn.LayerNorm(hidden, eps=1e-12)
        self.decoder_bias = torch.nn.Parameter(torch.zeros(VOCAB))

    def forward(self, ids, types, mask, positions, labels, nsp_labels):
        b, s = ids.shape
        x = self.words(ids) + self.types(types) + self.positions.weight[:s]
        x = F.dropout(self.ln(x), DROPOUT, True)
        adder = ((1.0 - mask[:, None, None, :].to(x.dtype)) * -10000.0)
        for layer in self.layers:
            x = layer(x, adder)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        nsp_loss = F.cross_entropy(self.nsp(pooled).float(), nsp_labels)
        flat = x.reshape(b * s, -1)
        index = (positions + torch.arange(b, device=ids.device)[:, None] * s).reshape(-1)
        t = self.transform_ln(gelu(self.transform(flat.index_select(0, index))))
        logits = F.linear(t, self.words.weight) + self.decoder_bias
        mlm_loss = F.cross_entropy(logits.float(), labels.reshape(-1))
        return mlm_loss + nsp_loss


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["large", "base", "tiny"], default="large")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--dtype", choices=["fp16", "bf16"], default="fp16")
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    cuda = args.device == "cuda"
    if cuda:
        gpu_timing.require_cuda("gpu_bert_probe.py")
    torch.manual_seed(0)
    dev = torch.device(args.device)
    dtype = torch.float16 if args.dtype == "fp16" else torch.bfloat16
    model = Bert(**CONFIGS[args.model]).to(dev)
    b, s = args.batch, args.seq
    predictions = 20 if s <= 128 else 80
    ids = torch.randint(0, VOCAB, (b, s), device=dev)
    types = torch.randint(0, TYPES, (b, s), device=dev)
    mask = torch.ones(b, s, device=dev)
    positions = torch.randint(0, s, (b, predictions), device=dev)
    labels = torch.randint(0, VOCAB, (b, predictions), device=dev)
    nsp_labels = torch.randint(0, 2, (b,), device=dev)
    scale = 128.0

    def step():
        if cuda:
            with torch.autocast(device_type="cuda", dtype=dtype, cache_enabled=False):
                loss = model(ids, types, mask, positions, labels, nsp_labels)
        else:
            loss = model(ids, types, mask, positions, labels, nsp_labels)
        (loss * scale).backward()
        return loss

    def sync():
        if cuda:
            torch.cuda.synchronize()

    for _ in range(3):
        step()
    sync()
    print(f"# {torch.cuda.get_device_name() if cuda else 'cpu'} torch {torch.__version__}; "
          f"BERT-{args.model} batch {b} seq {s} {args.dtype}, forward + backward, no optimizer")
    count, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < args.seconds or count < 2:
        step()
        count += 1
        if not cuda and count >= 2:
            break
    sync()
    eager_ms = (time.perf_counter() - t0) / count * 1e3
    print(f"eager: {eager_ms:.2f} ms per micro-batch over {count} micro-batches "
          f"({b * s / eager_ms * 1e3:.0f} tokens/s, {b / eager_ms * 1e3:.1f} sequences/s)")
    if not cuda:
        return
    graph_ms = gpu_timing.graph_ms(step, 20)
    print(f"graph: {graph_ms:.2f} ms per micro-batch, median of 20 replays "
          f"({b * s / graph_ms * 1e3:.0f} tokens/s)")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        step()
        sync()
    totals = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            key = e.name[:70]
            n, us = totals.get(key, (0, 0.0))
            totals[key] = (n + 1, us + e.device_time_total)
    all_us = sum(us for _, us in totals.values())
    print(f"kernels of one eager micro-batch: {all_us / 1e3:.2f} ms GPU time in {sum(n for n, _ in totals.values())} kernels")
    for name, (n, us) in sorted(totals.items(), key=lambda kv: -kv[1][1])[:25]:
        print(f"  {us / 1e3:8.3f} ms {n:5d}x  {name}")


if __name__ == "__main__":
    main()
