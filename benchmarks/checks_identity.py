"""Whether the rejection draw's token depends on its number of check launches (not a test).

    python benchmarks/checks_identity.py

The last check launch finishes a row still rejecting in one program (``reject_topp.
reject_rounds``); the others check it split over the row's programs. If the tokens are the same
bit for bit with 1, 2 and 3 check launches, the count may follow the batch size (fewer launches
for small batches: less host time per call) without a row's token depending on its batch.
Prints, per cell, the rows that drew more than once and whether the tokens agreed. Needs a GPU.
"""

from __future__ import annotations

import numpy as np
import torch

from qrita.backends.triton import launch as launch_mod
from qrita.testing import generators


def main() -> int:
    rng = np.random.default_rng(5)
    bad = 0
    for V in (32000, 131072):
        x = np.concatenate([generators.zipf_logits(32, V, rng=rng),
                            generators.gaussian_logits(32, V, rng=rng)])
        for dtype in ("float32", "bfloat16"):
            xt = torch.from_numpy(x).cuda().to(getattr(torch, dtype))
            seeds = torch.arange(64, device="cuda", dtype=torch.int64) * 7 + 1
            for p in (0.9, 0.5, 0.99):
                got = {}
                for checks in (1, 2, 3):
                    rounds = torch.zeros(64, dtype=torch.int32, device="cuda")
                    got[checks] = launch_mod.launch_reject_topp_sample(
                        xt, None, p, seeds, 3, rounds=rounds, split=True, checks=checks)
                multi = int((rounds >= 2).sum())
                same = all(torch.equal(got[c], got[3]) for c in (1, 2))
                bad += not same
                print(f"V={V} {dtype} p={p}: rows drawing twice or more {multi}, "
                      f"tokens equal across 1/2/3 checks: {same}", flush=True)
    print("ALL EQUAL" if bad == 0 else f"{bad} CELLS DIFFER")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
