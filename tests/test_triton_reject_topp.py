"""The rejection draw of top-p (``reject_topp.reject_topp_sample_kernel``: ``qrita.sample``'s
draw for the rows whose top-k is off) against its NumPy twin,
:func:`qrita.reference.sampling.sample_topp_rejection`, and ``sample``'s routing against
:func:`qrita.reference.sampling.sample`.

Tokens are compared exactly (full arrays) on every row whose reference draw stayed away from the
docs/sampling.md margins (the trace's ``near``); a row that came within them may take another
token, but only one the top-p set keeps. Under TRITON_INTERPRET=1 on CPU (small V, every
generator family, every dtype); the GPU tests run the same checks at real shapes.
"""

from __future__ import annotations

import numpy as np
import pytest
from _triton_env import DEVICE, ON_GPU, torch  # first: sets up triton

from qrita.backends.triton import launch as launch_mod  # noqa: E402
from qrita.backends.triton import sampling_ops as so  # noqa: E402
from qrita.reference import oracle  # noqa: E402
from qrita.reference import sampling as ref  # noqa: E402
from qrita.testing import generators  # noqa: E402

TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
P_CYCLE = [0.9, 0.0, 1e-9, 0.5, 1.0, 1.0 - 1e-7, np.nan, 0.3, 0.99, -1.0]
MIN_P_CYCLE = [0.0, np.nan, 0.05, 0.5, 1.0, 2.0, -1.0, 1e-9]


def _families(V: int, dtype: str, seed: int) -> np.ndarray:
    """Every generator family at V, stacked, on the dtype's grid (bfloat16 as float32)."""
    rng = np.random.default_rng([V, seed])
    x = np.concatenate([b for _, b in generators._family_batches(V, rng)])
    return generators.to_dtype(x, dtype)


def _dev(x: np.ndarray, dtype: str) -> torch.Tensor:
    return torch.from_numpy(np.array(x, copy=True)).to(DEVICE).to(TORCH_DTYPES[dtype])


def _arg(v):
    return torch.from_numpy(np.array(v, copy=True)).to(DEVICE) if isinstance(v, np.ndarray) else v


def check_rows(x: np.ndarray, tokens: np.ndarray, p, temperature, seed, offset,
               min_p=None) -> int:
    """Assert the kernel's tokens against the reference (see the module docstring); returns the
    number of rows that drew more than once."""
    want, trace = ref.sample_topp_rejection(x, p, temperature=temperature, min_p=min_p,
                                            seed=seed, offset=offset, return_trace=True)
    keep = ref.keep_mask(x, None, p, temperature=temperature, min_p=min_p)
    bad = [b for b in range(x.shape[0]) if tokens[b] != want[b]
           and (not trace.near[b] or not keep[b, tokens[b]])]
    assert not bad, (f"{len(bad)} rows differ: rows {bad[:6]}, got {tokens[bad[:6]]}, "
                     f"want {want[bad[:6]]}, rounds {trace.rounds[bad[:6]]}")
    return int((trace.rounds >= 2).sum())


def _cycle(values, n, shift=0):
    return np.array([values[(i + shift) % len(values)] for i in range(n)], dtype=np.float64)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_reject_topp_matches_the_reference(dtype):
    """Every generator family (ties at the boundary, all-equal, -inf, NaN, +inf, extremes), odd
    V, scalar / per-row / 0 / tiny / off p, min-p alone and after top-p (scalar and per-row: 0,
    NaN, tiny, 1, above 1, negative), scalar temperatures, per-row and scalar seeds and offsets;
    rows that reject (two or more draws) occur and match too."""
    V = 509
    x = _families(V, dtype, 3)
    B = x.shape[0]
    seeds = (np.arange(B, dtype=np.int64) * 1000003 + 17) * -1  # uint64 bit patterns > 2^63 too
    offsets = np.arange(B, dtype=np.int64) * 3
    cases = [
        dict(p=0.9), dict(p=None), dict(p=_cycle(P_CYCLE, B)), dict(p=0.0), dict(p=1e-9),
        dict(p=0.5, temperature=0.7), dict(p=0.999, temperature=3.0), dict(p=0.3),
        dict(p=_cycle(P_CYCLE, B, 4).astype(np.float32), temperature=0.25),
        dict(min_p=0.1), dict(p=0.9, min_p=_cycle(MIN_P_CYCLE, B)),
        dict(p=_cycle(P_CYCLE, B, 2), min_p=0.02, temperature=2.0),
    ]
    if dtype != "float32":  # the 16-bit dtypes differ only in the loads: the main cases
        cases = [cases[i] for i in (0, 2, 5, 10)]
    multi = 0
    for i, case in enumerate(cases):
        p, t, m = case.get("p"), case.get("temperature"), case.get("min_p")
        seed, offset = (seeds, offsets) if i % 2 == 0 else (int(2**64 - 5 - i), 7 + i)
        tokens = launch_mod.launch_reject_topp_sample(
            _dev(x, dtype), t, _arg(p), _arg(seed), _arg(offset), _arg(m))
        multi += check_rows(x, tokens.cpu().numpy(), p, t, seed, offset, m)
    assert multi >= B // 4, multi  # the rejection rounds ran on many rows


@pytest.mark.parametrize("block,group", [(16, 4), (64, 1)])
def test_reject_topp_rounds_and_tiles(block, group):
    """Rows spanning several groups of tiles (16 x 4: 5 groups of 4 tiles; 64 x 1: one tile per
    group) and the reported rounds equal the reference's where the draws stayed off the
    margins."""
    V = 257
    x = _families(V, "float32", 8)
    B = x.shape[0]
    seeds = np.arange(B, dtype=np.int64) + 99
    most = 0
    for p in (0.9, 0.0):
        rounds = torch.zeros(B, dtype=torch.int32, device=DEVICE)
        tokens = launch_mod.launch_reject_topp_sample(_dev(x, "float32"), None, p, _arg(seeds),
                                                      0, rounds=rounds, block=block,
                                                      group=group)
        check_rows(x, tokens.cpu().numpy(), p, None, seeds, 0)
        _, trace = ref.sample_topp_rejection(x, p, seed=seeds, offset=0, return_trace=True)
        got = rounds.cpu().numpy()
        assert np.array_equal(got[~trace.near], trace.rounds[~trace.near])
        most = max(most, int(got.max()))
    assert most >= 3, most


def _check_sample(x: np.ndarray, k, p, temperature, min_p, seed, offset) -> None:
    """``sample`` (tokens, and tokens + log-probabilities) against ``ref.sample``: rows whose
    top-k is off must equal the rejection reference off its margins (else a kept token), rows
    whose top-k is on the rank-order reference; the log-probability is the drawn token's."""
    xt = _dev(x, "float32")
    got = so.sample(xt, _arg(k), _arg(p), min_p=_arg(min_p), temperature=_arg(temperature),
                    seed=_arg(seed), offset=_arg(offset)).cpu().numpy()
    tok, lp = so.sample(xt, _arg(k), _arg(p), min_p=_arg(min_p), temperature=_arg(temperature),
                        seed=_arg(seed), offset=_arg(offset), return_logprob=True)
    assert np.array_equal(tok.cpu().numpy(), got)  # the log-probability changes no token
    want, want_lp = ref.sample(x, k, p, min_p=min_p, temperature=temperature, seed=seed,
                               offset=offset, return_logprob=True)
    B, V = x.shape
    off = ref.top_k_off(k, B, V)
    _, trace = ref.sample_topp_rejection(x, p, temperature=temperature, min_p=min_p, seed=seed,
                                         offset=offset, return_trace=True)
    keep = ref.keep_mask(x, k, p, temperature=temperature, min_p=min_p)
    bad = [b for b in range(B) if got[b] != want[b]
           and (not off[b] or not trace.near[b] or not keep[b, got[b]])]
    assert not bad, (bad[:6], got[bad[:6]], want[bad[:6]])
    same = got == want
    np.testing.assert_allclose(lp.cpu().numpy()[same], want_lp[same], rtol=2e-6, atol=1e-6)


def test_sample_takes_the_rejection_draw_where_top_k_is_off(monkeypatch):
    """``sample`` (docs/sampling.md, "Which draw"): the rejection draw for the rows whose top-k
    is off (k None, 0, >= V; scalar or per row, mixed with rows whose top-k is on), with p,
    min-p, scalar and per-row temperatures (greedy rows: 0, NaN, negative; temperatures beyond
    [1e-30, 1e30], clamped) and with log-probabilities; the rank-order draw elsewhere."""
    calls = []
    real = so.launch_reject_topp_sample

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(so, "launch_reject_topp_sample", counted)
    V = 300
    x = np.concatenate([generators.zipf_logits(6, V, rng=3), _families(V, "float32", 5)[:10]])
    B = x.shape[0]
    seeds = np.arange(B, dtype=np.int64) * 31 + 2
    temps = _cycle([1.0, 0.0, 0.7, np.nan, 1e-40, 2.0, -1.0, 1e40, np.inf, 0.3, 1e-30], B)
    ks = np.array([(0, 1, V, 50, V + 3, -2, V - 1, 7)[i % 8] for i in range(B)], np.int64)
    cases = [dict(k=None, p=0.9), dict(k=V, p=0.9, temperature=0.5),
             dict(k=None, p=None, min_p=0.2), dict(k=0, p=0.8, temperature=temps),
             dict(k=ks, p=0.9, temperature=temps), dict(k=ks, p=_cycle(P_CYCLE, B), min_p=0.05),
             dict(k=None, p=0.95, temperature=1e-45)]
    for i, case in enumerate(cases):
        seed, offset = (seeds, i) if i % 2 == 0 else (11 + i, 5)
        _check_sample(x, case["k"], case.get("p"), case.get("temperature"), case.get("min_p"),
                      seed, offset)
    assert len(calls) == 2 * len(cases)
    so.sample(_dev(x, "float32"), 50, 0.9, seed=5)  # top-k on: the rank-order draw only
    assert len(calls) == 2 * len(cases)
    fresh = so.sample(_dev(x, "float32"), None, 0.9)  # a fresh seed: a token top-p keeps
    keep = oracle.keep_mask(x, None, 0.9)
    assert keep[np.arange(B), fresh.cpu().numpy()].all()


@pytest.mark.parametrize("checks,per_program,ahead,row_axis,bound,check_per_program",
                         [(1, 1, 1, 0, 1, None), (2, 1, 1, 1, 2, 3),
                          (2, 3, 2, 0, 0, 1), (2, 1, 1, 0, 2, None)])
def test_reject_split_matches_the_reference(checks, per_program, ahead, row_axis, bound,
                                            check_per_program):
    """The split path (each row's S groups over programs of ``per_program`` groups: group
    statistics and round 0's draw, then check launches, the last of which finishes the rows
    still rejecting in one program): every generator family, p scalar / per row / 0, min-p,
    per-row temperatures with greedy rows; tokens and rounds as the reference's. With 1 check
    launch every row that draws three times or more is finished in one program; 3 groups per
    program leave the last program of a row (S = 8 here) with 2; ``ahead``: tiles loaded
    ahead of use; ``row_axis`` 1: grid (P, B); ``bound``: round 0's entry kept without the
    check read where the group statistics bound the mass before it under p x Z (2: with the
    groups' near masses too);
    ``check_per_program``: the check launches' own groups per program."""
    V = 509
    x = _families(V, "float32", 12)
    B = x.shape[0]
    seeds = np.arange(B, dtype=np.int64) * 13 + 1
    temps = _cycle([0.7, 0.0, 1.0, np.nan, 2.0], B)
    multi = 0
    for p, m, t in ((0.9, None, None), (_cycle(P_CYCLE, B), 0.05, temps), (0.3, None, 0.5),
                    (None, 0.2, None)):
        rounds = torch.zeros(B, dtype=torch.int32, device=DEVICE)
        tokens = launch_mod.launch_reject_topp_sample(
            _dev(x, "float32"), _arg(t), _arg(p), _arg(seeds), 6, _arg(m), rounds=rounds,
            split=True, checks=checks, groups_per_program=per_program, ahead=ahead,
            row_axis=row_axis, bound=bound, check_groups_per_program=check_per_program)
        multi += check_rows(x, tokens.cpu().numpy(), p, t, seeds, 6, m)
        _, trace = ref.sample_topp_rejection(x, p, temperature=t, min_p=m, seed=seeds, offset=6,
                                             return_trace=True)
        got = rounds.cpu().numpy()
        assert np.array_equal(got[~trace.near], trace.rounds[~trace.near])
    assert multi >= B // 4, multi


def test_reject_topp_per_row_temperatures():
    """The kernel's per-row temperatures: in [1e-30, 1e30], and greedy rows (0, NaN, negative:
    the first entry of the order)."""
    V = 509
    x = _families(V, "float32", 9)
    B = x.shape[0]
    temps = _cycle([0.7, 0.0, 1.0, np.nan, 1e-30, 3.0, -2.0, 1e30, 0.05], B)
    seeds = np.arange(B, dtype=np.int64) + 5
    for p, m in ((0.9, None), (_cycle(P_CYCLE, B), 0.1)):
        tokens = launch_mod.launch_reject_topp_sample(_dev(x, "float32"), _arg(temps), _arg(p),
                                                      _arg(seeds), 4, _arg(m))
        check_rows(x, tokens.cpu().numpy(), p, temps, seeds, 4, m)


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU, reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_gpu_reject_topp_real_vocab(dtype):
    """Real vocabularies: zipf and gaussian rows, p in {0.9, 0.5, per-row}, compiled."""
    rng = np.random.default_rng(11)
    for V in (32000, 151936):
        x = np.concatenate([generators.zipf_logits(4, V, rng=rng),
                            generators.gaussian_logits(4, V, rng=rng)])
        x = generators.to_dtype(x, dtype)
        seeds = np.arange(x.shape[0], dtype=np.int64) * 7 + 1
        for p in (0.9, 0.5, _cycle(P_CYCLE, x.shape[0])):
            for split in (False, True):  # one program per row; each row over S programs
                tokens = launch_mod.launch_reject_topp_sample(_dev(x, dtype), None, _arg(p),
                                                              _arg(seeds), 3, split=split)
                check_rows(x, tokens.cpu().numpy(), p, None, seeds, 3)
            # the split's groups per program and grid order change the grid, not the token
            # (bit for bit), and so does keeping round 0's entry on the statistics' bound
            for per_program, row_axis, bound, check_pp in (
                    (3, 0, 1, None), (1 << 20, 0, 2, 1), (3, 1, 1, 5),
                    (1, 0, 0, 1 << 20), (3, 0, 2, None)):
                again = launch_mod.launch_reject_topp_sample(
                    _dev(x, dtype), None, _arg(p), _arg(seeds), 3, split=True,
                    groups_per_program=per_program, row_axis=row_axis, bound=bound,
                    check_groups_per_program=check_pp)
                assert torch.equal(again, tokens), (per_program, row_axis, bound, check_pp)
        one = launch_mod.launch_reject_topp_sample(_dev(x[:1], dtype), None, 0.9, 5, 3)
        check_rows(x[:1], one.cpu().numpy(), 0.9, None, 5, 3)  # B = 1: a row alone
