#!/usr/bin/env python3
"""Least-squares split of measured step times into the projection's parts.

For every case of a calibration file (default: the 8-GPU llm-foundry runs without recompute),
runs `project --case FILE:ID --format json --show-ops`, sums the op times of one step into
  gemm   the layers' GEMMs,
  out    the output layer's GEMMs and memory-bound ops (final norm, loss, train metrics),
  attn   the attention cores,
  mem    the layers' memory-bound kernels,
  other  everything outside the compute (exposed communication, optimizer, bubble),
and fits, per GPU, measured step = other + mem + g*gemm + o*out + a*attn (relative least squares).
With --logit-bytes the output factor is replaced by a memory-bound term: extra bytes per logit
at the HBM peak, with the output GEMMs scaled like the layer GEMMs.

Standard library only. Usage (from the repository root, after building):
  python3 tools/split_fit.py [--cases calibration/public.jsonl] [--only llm-foundry]
                             [--gpus 8] [--recompute none] [--logit-bytes] [--train-metric-passes N]
"""
import argparse
import collections
import functools
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

GPUS = ("a100-sxm-40gb", "a100-sxm-80gb", "h100-sxm")


@functools.lru_cache(maxsize=None)
def hbm_tbs(gpu):
    """HBM bandwidth at the datasheet peak, TB/s, from the shipped hardware profile."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hw_profiles",
                        gpu + ".json")
    with open(path) as f:
        return json.load(f)["gpu"]["hbm_bandwidth_tbs"]["value"]


def lstsq(rows, targets):
    """Solves the normal equations of a small dense least-squares problem."""
    n = len(rows[0])
    m = [[sum(r[i] * r[j] for r in rows) for j in range(n)] for i in range(n)]
    v = [sum(r[i] * t for r, t in zip(rows, targets)) for i in range(n)]
    for i in range(n):
        p = max(range(i, n), key=lambda r: abs(m[r][i]))
        m[i], m[p], v[i], v[p] = m[p], m[i], v[p], v[i]
        for r in range(n):
            if r != i:
                f = m[r][i] / m[i][i]
                m[r] = [a - f * b for a, b in zip(m[r], m[i])]
                v[r] -= f * v[i]
    return [v[i] / m[i][i] for i in range(n)]


def median(xs):
    s = sorted(xs)
    k = len(s)
    return s[k // 2] if k % 2 else 0.5 * (s[k // 2 - 1] + s[k // 2])


def parts_of(binary, cases_file, case, extra):
    out = subprocess.run([binary, "--case", f"{cases_file}:{case['id']}", "--format", "json",
                          "--show-ops"] + extra, capture_output=True, text=True, check=True)
    p = json.loads(out.stdout)
    sums = collections.Counter()
    for op in p["ops"]:
        key = "out" if op["module"] == "output" else op["kind"]
        sums[{"gemm": "gemm", "attention": "attn", "memory": "mem"}.get(key, key)] += (
            op["time_s"] * op["count"])
    mb = p["micro_batches"]
    scale = p["breakdown"]["compute_s"] / (sum(sums.values()) * mb)  # overlap-free check ~1
    row = {k: sums[k] * mb * scale for k in ("gemm", "out", "attn", "mem")}
    row["other"] = p["step_time_s"] - p["breakdown"]["compute_s"]
    tokens = case["global_batch"] * case["seq_len"] / case["num_gpus"]
    row["measured"] = tokens / case["measured"]["tokens_per_s_per_gpu"]
    row["logit_s_per_byte"] = tokens * case["model"]["vocab"] / (hbm_tbs(case["gpu"]) * 1e12)
    row.update(id=case["id"], gpu=case["gpu"], model=case["model"]["name"])
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default="calibration/public.jsonl")
    ap.add_argument("--binary", default="build/cli/project")
    ap.add_argument("--only", default="llm-foundry", help="source or id substring")
    ap.add_argument("--gpus", type=int, default=8, help="only cases with this GPU count (0: all)")
    ap.add_argument("--recompute", default="none", help="only this recompute mode ('' : all)")
    ap.add_argument("--logit-bytes", action="store_true",
                    help="fit extra bytes per logit instead of an output-layer factor")
    ap.add_argument("--train-metric-passes", default=None, help="passed to project")
    args = ap.parse_args()
    extra = [] if args.train_metric_passes is None else [
        "--train-metric-passes", args.train_metric_passes]
    cases = [json.loads(l) for l in open(args.cases) if l.strip()]
    cases = [c for c in cases
             if (args.only in c["id"] or args.only in c["source"])
             and (args.gpus == 0 or c["num_gpus"] == args.gpus)
             and (not args.recompute or c["recompute"] == args.recompute)
             and c["precision"] == "bf16" and c["gpu"] in GPUS]
    with ThreadPoolExecutor(4) as pool:
        rows = list(pool.map(lambda c: parts_of(args.binary, args.cases, c, extra), cases))
    for gpu in sorted({r["gpu"] for r in rows}):
        rs = [r for r in rows if r["gpu"] == gpu]
        if args.logit_bytes:
            keys, names = ("gemm+out", "logit_s_per_byte", "attn"), ("gemm", "bytes/logit", "attn")
            for r in rs:
                r["gemm+out"] = r["gemm"] + r["out"]
        else:
            keys, names = ("gemm", "out", "attn"), ("gemm", "output", "attn")
        a = [[r[k] / r["measured"] for k in keys] for r in rs]
        b = [1 - (r["other"] + r["mem"]) / r["measured"] for r in rs]
        coef = lstsq(a, b)
        resid = []
        by_model = collections.defaultdict(list)
        for r in rs:
            fit = r["other"] + r["mem"] + sum(c * r[k] for c, k in zip(coef, keys))
            e = 100 * (r["measured"] / fit - 1)
            resid.append(abs(e))
            by_model[r["model"]].append(round(e, 1))
        print(f"{gpu}: {len(rs)} cases, " +
              ", ".join(f"{n} x{c:.2f}" if n != "bytes/logit" else f"{n} {c:.1f}"
                        for n, c in zip(names, coef)) +
              f"; residual median {median(resid):.1f}%, max {max(resid):.1f}%")
        for model, es in sorted(by_model.items()):
            print(f"    {model:10s} {es}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
