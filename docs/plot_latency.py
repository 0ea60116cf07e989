"""Render the empty-kernel latency distribution of WaitLatencyBench (CSV: method,us) to a PNG.

Usage: python3 docs/plot_latency.py latency.csv latency.png   (needs matplotlib)
"""
import csv
import sys
from collections import defaultdict

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

samples = defaultdict(list)
with open(sys.argv[1]) as f:
    for row in csv.DictReader(f):
        samples[row["method"]].append(float(row["us"]))

fig, ax = plt.subplots(figsize=(10, 6))
for method, values in samples.items():
    values.sort()
    n = len(values)
    ax.plot(values, [100.0 * (i + 1) / n for i in range(n)], label=method, linewidth=1.5)
ax.set_xscale("log")
ax.set_xlabel("launch-to-wake latency, microseconds (log scale)")
ax.set_ylabel("percentile")
ax.set_title("One waiter, empty kernel, NVIDIA H200: latency distribution (CDF)")
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=8, loc="lower right")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=120)
print("wrote", sys.argv[2])
