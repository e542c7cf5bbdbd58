"""Reproduce a paper figure"""

# %%
# `make figures` runs every figure's experiment and plot; one figure at a
# smaller scale is one call. Figure 3 is Pollux's fairness knob: the exact
# allocation for p from 1 (total speedup) down to -inf (the worst-off job).
# The `tiny` scale runs in seconds; `default` is what `make figures` makes, and
# `full` the paper's scale on the published traces.

# %%
from goodopt.paper_figures.__main__ import main

main(["--only", "fig3", "--scale", "tiny", "--out", "figures", "--quiet"])

# %%
# Every figure is drawn from tables written beside it, each with a
# `.meta.json` of its provenance. The plot reads only these tables, so a
# figure can be checked, and redrawn (`--plot-only`), from them alone.

# %%
import pandas as pd

jobs = pd.read_csv("figures/tables/fairness-jobs.csv")
knob = jobs.groupby("p")["speedup"].agg(["min", "mean"]).sort_index(ascending=False)
print(knob.round(3).to_string())

# %%
# The knob works as Pollux describes: lowering p raises the worst-off job's
# speedup and gives up some of the mean. A test of that, on the same table:

# %%
ps = sorted(jobs["p"].unique(), reverse=True)
worst = [jobs.loc[jobs["p"] == p, "speedup"].min() for p in ps]
print("worst-off speedup never falls as p decreases:", all(b >= a - 1e-9 for a, b in zip(worst, worst[1:])))

# %%
# The figure itself:

# %%
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(9, 4))
ax.imshow(plt.imread("figures/fairness_knob.png"))
ax.axis("off")
