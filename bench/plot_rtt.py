"""Plots RTT vs vector size per runner from mlbridge-bench's results.csv.

    python bench/plot_rtt.py results.csv rtt.png
"""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    src, out = sys.argv[1], sys.argv[2]
    series = defaultdict(list)
    with open(src, newline="") as f:
        for row in csv.DictReader(f):
            if row["section"] != "rtt" or row["median_us"] == "null":
                continue
            name = row["runner"] if row["serdes"] in ("raw", "in-process") \
                else f"{row['runner']}+{row['serdes']}"
            series[name].append((int(row["n"]), float(row["median_us"])))
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=80)
    for name, pts in sorted(series.items()):
        pts.sort()
        style = "--" if name.endswith("floor") else "-"
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=name,
                marker="." if len(pts) < 10 else None)
    ax.set_yscale("log")
    ax.set_xlabel("vector size (floats)")
    ax.set_ylabel("round-trip time per request (us, median)")
    ax.set_title("mlbridge-bench: RTT vs vector size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(out)
    print(out)


if __name__ == "__main__":
    main()
