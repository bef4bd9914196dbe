"""Sweep GPU counts and layouts for Llama-3.1-70B, compare two GPUs, and plot TGS.

    PYTHONPATH=build/python python3 examples/sweep_70b.py [--out DIR]

Prints a table per GPU (the best layout at each count, from the layout search), and with
matplotlib installed (Debian: python3-matplotlib) writes DIR/tgs_vs_gpus.png. pandas is used when
present for the table, plain text otherwise.
"""
import argparse
import os

import projector

GPUS = ["h100-sxm", "mi300x"]
COUNTS = [64, 128, 256]
JOB = dict(model="llama3.1-70b", seq_len=8192, global_batch=256,
           # A narrowed space keeps the example quick; drop these for the full search.
           tp_values=[4, 8], pp_values=[1, 2, 4], vpp_values=[1], cp_values=[1],
           micro_batch_values=[1], recompute_values=["selective", "full"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=".", help="directory for the chart")
    args = parser.parse_args()
    rows = []
    for gpu in GPUS:
        study = projector.scale(num_gpus=COUNTS, gpu_arch=gpu, **JOB)
        for point in study.records():
            rows.append({"gpu": gpu, "num_gpus": point["num_gpus"],
                         "layout": point.get("layout", "-"),
                         "tgs": point.get("tokens_per_s_per_gpu", 0.0),
                         "efficiency": point.get("efficiency", 0.0)})
    try:
        import pandas as pd
        print(pd.DataFrame(rows).to_string(index=False))
    except ImportError:
        for r in rows:
            print(f"{r['gpu']:10} {r['num_gpus']:6} {r['tgs']:10.1f} {r['efficiency']:6.2f}  "
                  f"{r['layout']}")
    # The same run on both GPUs, side by side, and what sets them apart.
    c = projector.compare(model="llama3.1-70b", num_gpus=64, tp=8, pp=2, seq_len=8192,
                          global_batch=256, sequence_parallel=True, recompute="selective",
                          gpu_arch=GPUS)
    for side in c.sides:
        print(f"{side['gpu']}: {side['tokens_per_s_per_gpu']:.1f} TGS, {side['layout']}")
    print("largest difference:", c.causes[0]["term"] if c.causes else "none")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no chart")
        return
    for gpu in GPUS:
        xs = [r["num_gpus"] for r in rows if r["gpu"] == gpu]
        ys = [r["tgs"] for r in rows if r["gpu"] == gpu]
        plt.plot(xs, ys, marker="o", label=gpu)
    plt.xscale("log", base=2)
    plt.xlabel("GPUs")
    plt.ylabel("tokens/s per GPU (best layout)")
    plt.title("Llama-3.1-70B, seq 8192, global batch 256")
    plt.legend()
    path = os.path.join(args.out, "tgs_vs_gpus.png")
    plt.savefig(path, dpi=120)
    print("chart:", path)


if __name__ == "__main__":
    main()
