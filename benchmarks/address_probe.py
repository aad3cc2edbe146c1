"""Why masks by address were slow at B = 64 in the thirty-ninth session's bench: per-call host
and device time of sequential eager calls, and the eager graphs' bookkeeping after them.

    QRITA_EAGER_GRAPHS_MASK_ADDRESS=1 python benchmarks/address_probe.py
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from triton.testing import do_bench  # noqa: E402

import qrita  # noqa: E402
from qrita.backends.triton import eager_graph  # noqa: E402
from qrita.testing import generators  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from graph_probe import time_calls  # noqa: E402

rng = np.random.default_rng(0)
x = torch.tensor(generators.zipf_logits(64, 131072, 1.1, rng), device="cuda")
time_calls("topk50 fp32 B=64", lambda: qrita.top_k_mask(x, 50), 12)
time_calls("topp0.9 fp32 B=64", lambda: qrita.top_p_mask(x, 0.9), 12)
time_calls("top_k k50 fp32 B=64", lambda: qrita.top_k(x, 50), 12)
for name, fn in (("topk50", lambda: qrita.top_k_mask(x, 50)),
                 ("topp0.9", lambda: qrita.top_p_mask(x, 0.9))):
    print(name, "do_bench median us", round(do_bench(fn, warmup=5, rep=20,
                                                     return_mode="median") * 1e3, 1))
print("  graphs", len(eager_graph._GRAPHS), "captures", dict(eager_graph._CAPTURES))
