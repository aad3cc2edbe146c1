"""How often the rejection draw's bound decides round 0 without a check read (a NumPy model,
not a test; docs/sampling.md, "The rejection draw", kernels item 1).

    python benchmarks/reject_bound_sim.py [--rows 64] [--draws 50] [--group 2048]

Per row (Zipf(1.1) and Gaussian N(0, 2^2) logits, temperature 1): draws t from the softmax, then
bound = (sum of the weights of the groups whose max >= x_t) x (1 + 2^-10), as the statistics
kernel computes it, in float64 here. Prints the share of draws where bound < p x Z (kept with no
check read), the share the check rejects (the mass before t reaches p x Z), and, over the draws
the bound leaves to the check, the share of groups the check could leave unread (max < x_t).
With ``--near C`` (nats) also the bound of ``QRITA_REJECT_BOUND=2``: a group whose max is within
C of x_t counts only its mass within C of its max (one tile per group: exact).
"""

from __future__ import annotations

import argparse

import numpy as np

from qrita.testing import generators


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=64)
    ap.add_argument("--draws", type=int, default=50)
    ap.add_argument("--group", type=int, default=2048)
    ap.add_argument("--vocab", default="32000,131072,151936,262144")
    ap.add_argument("--p", default="0.5,0.9,0.99")
    ap.add_argument("--near", type=float, default=4.0)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    G = args.group
    for name, make, scale in (("zipf", generators.zipf_logits, 1.1),
                              ("gaussian", generators.gaussian_logits, 2.0)):
        for V in map(int, args.vocab.split(",")):
            x = make(args.rows, V, scale, rng).astype(np.float64)
            S = -(-V // G)
            for p in map(float, args.p.split(",")):
                kept = rejected = n = 0
                checked = unread = kept_near = 0
                for row in x:
                    w = np.exp(row - row.max())
                    Z = w.sum()
                    group_max = np.array([row[g * G:(g + 1) * G].max() for g in range(S)])
                    group_w = np.array([w[g * G:(g + 1) * G].sum() for g in range(S)])
                    near_w = np.array([w[g * G:(g + 1) * G][row[g * G:(g + 1) * G]
                                                           >= group_max[g] - args.near].sum()
                                       for g in range(S)])
                    for t in rng.choice(V, size=args.draws, p=w / Z):
                        bound = group_w[group_max >= row[t]].sum() * (1 + 2**-10)
                        ahead = (row > row[t]) | ((row == row[t]) & (np.arange(V) < t))
                        kept += bound < p * Z
                        close = (group_max >= row[t]) & (group_max - row[t] <= args.near)
                        reach = np.where(close, near_w, np.where(group_max >= row[t], group_w, 0))
                        kept_near += reach.sum() * (1 + 2**-10) < p * Z
                        rejected += w[ahead].sum() >= p * Z
                        n += 1
                        if bound >= p * Z:
                            checked += S
                            unread += int((group_max < row[t]).sum())
                print(f"{name:8s} V={V:6d} p={p:<5}: kept on the bound {kept / n:6.1%} "
                      f"(with the near masses {kept_near / n:6.1%}), rejected by the check "
                      f"{rejected / n:6.1%}, groups a check could leave unread "
                      f"{unread / max(checked, 1):6.1%} ({n} draws)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
