"""The NumPy sampling reference (qrita/reference/sampling.py) against docs/sampling.md.

Philox known answers (cross-checked bit for bit against Triton's ``tl.randint4x`` under the
interpreter), injected uniforms against a brute force, greedy, goodness of fit, support,
reproducibility, probabilities, candidates and edge rows.
"""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from qrita.reference import oracle
from qrita.reference import sampling as ref

INF, NAN = np.inf, np.nan

# ---------------------------------------------------------------------------------------------
# Philox-4x32-10

# Computed with qrita.reference.sampling.random_words and checked against Triton's
# tl.randint4x(seed, offset) (int64 offset) under TRITON_INTERPRET=1 when this file was written.
KAT = [
    (0, 0, (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8), 0.3990464210510254),
    (1, 0, (0xE3E80670, 0xE50A0EBC, 0x95F222C0, 0xB615AA27), 0.8902591466903687),
    (0, 1, (0xF8E4CCA4, 0x5CB200DB, 0xB1A574EB, 0x097EFF67), 0.9722411632537842),
    (2**64 - 1, 2**64 - 1, (0x4D18D7D2, 0x430AC65A, 0xBD2FA22A, 0x0AFAE10D), 0.3011602759361267),
    (
        12345678901234,
        2**32 + 5,
        (0x7C9BE60F, 0xB0FFFF58, 0xA65DE84E, 0x6098FC64),
        0.48675382137298584,
    ),
]


@pytest.mark.parametrize("seed,offset,words,u", KAT)
def test_philox_known_answers(seed, offset, words, u):
    got = ref.random_words(seed, offset)
    assert tuple(int(w) for w in got) == words
    assert float(ref.uniforms(seed, offset)) == u
    assert float(ref.uniforms(seed, offset)) == (words[0] >> 8) / 2**24


def test_philox_is_vectorised_and_signed_inputs_wrap():
    seeds = np.array([0, 1, 0, 12345678901234], dtype=np.uint64)
    offs = np.array([0, 0, 1, 2**32 + 5], dtype=np.uint64)
    w0 = ref.random_words(seeds, offs)[0]
    assert [int(v) for v in w0] == [0x6627E8D5, 0xE3E80670, 0xF8E4CCA4, 0x7C9BE60F]
    # int64 -1 is the bit pattern 2**64 - 1
    assert int(ref.random_words(np.int64(-1), np.int64(-1))[0]) == 0x4D18D7D2


def test_uniforms_range_and_grid():
    u = ref.uniforms(7, np.arange(100_000, dtype=np.uint64))
    assert u.min() >= 0 and u.max() < 1
    assert np.all(u * 2**24 == np.floor(u * 2**24))
    assert np.all(u.astype(np.float32).astype(np.float64) == u)  # exact in float32
    assert abs(u.mean() - 0.5) < 0.01


needs_triton = pytest.mark.skipif(
    importlib.util.find_spec("triton") is None or importlib.util.find_spec("torch") is None,
    reason="triton / torch not installed",
)


@needs_triton
def test_philox_matches_triton_randint4x_bit_for_bit():
    """Run tl.randint4x (interpreter on CPU, the compiled kernel on a GPU) and compare."""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def kernel(seed_ptr, off_ptr, out_ptr, u_ptr, N: tl.constexpr):
        i = tl.arange(0, N)
        seed = tl.load(seed_ptr + i)
        off = tl.load(off_ptr + i)
        a, b, c, d = tl.randint4x(seed, off)
        tl.store(out_ptr + 4 * i, a)
        tl.store(out_ptr + 4 * i + 1, b)
        tl.store(out_ptr + 4 * i + 2, c)
        tl.store(out_ptr + 4 * i + 3, d)
        r = tl.randint(seed, off).to(tl.uint32, bitcast=True)
        tl.store(u_ptr + i, (r >> 8).to(tl.float32) * (1.0 / 16777216.0))

    rng = np.random.default_rng(0)
    n = 64
    seeds = rng.integers(0, 2**63, size=n, dtype=np.int64)
    offs = rng.integers(0, 2**63, size=n, dtype=np.int64)
    seeds[:4] = [0, 1, 0, 12345678901234]
    offs[:4] = [0, 0, 1, 2**32 + 5]
    offs[4:8] = [2**32 - 1, 2**32, 5, 2**40 + 3]
    seeds[8:10] = [-1, -(2**40)]  # int64 bit patterns of seeds >= 2**63
    offs[8:10] = [-5, -(2**33)]
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    out = torch.zeros(4 * n, dtype=torch.int32, device=dev)
    u = torch.zeros(n, dtype=torch.float32, device=dev)
    kernel[(1,)](torch.from_numpy(seeds).to(dev), torch.from_numpy(offs).to(dev), out, u, N=n)
    got = out.cpu().numpy().view(np.uint32).reshape(n, 4)
    want = np.stack(ref.random_words(seeds, offs), axis=1)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(u.cpu().numpy().astype(np.float64), ref.uniforms(seeds, offs))


# ---------------------------------------------------------------------------------------------
# injected uniforms against a brute force

VALUES = [-INF, -2.0, -0.5, 0.0, 0.0, 0.5, 1.0, 3.0, INF, NAN]


def brute(row, k, p, min_p, temperature, u):
    """Token, probabilities (dict index -> prob) by plain Python, keep-set from the oracle."""
    order = [int(i) for i in oracle.order(np.asarray(row, dtype=np.float64))]
    if temperature is not None and not temperature > 0:
        return order[0], {order[0]: 1.0}
    t = 1.0 if temperature is None else temperature
    scaled = [v / t for v in row]
    keep = oracle.keep_mask(np.asarray(scaled), k, p)
    kept = [i for i in order if keep[i]]
    if any(scaled[i] == math.inf for i in kept):
        w = {i: 1.0 if scaled[i] == math.inf else 0.0 for i in kept}
    elif any(math.isfinite(scaled[i]) for i in kept):
        m = max(scaled[i] for i in kept if math.isfinite(scaled[i]))
        w = {i: math.exp(scaled[i] - m) if math.isfinite(scaled[i]) else 0.0 for i in kept}
        if min_p is not None and min_p > 0:
            w = {i: x for i, x in w.items() if x >= min(min_p, 1.0)}
    else:
        return kept[0], {kept[0]: 1.0}
    total = math.fsum(w.values())
    pr = {i: x / total for i, x in w.items()}
    acc = 0.0
    for i in kept:
        if i not in pr:
            continue
        acc += pr[i]
        if acc > u:
            return i, pr
    return None, pr  # only reachable through rounding at u ~ 1


@given(
    row=st.lists(st.sampled_from(VALUES), min_size=1, max_size=6),
    k=st.one_of(st.none(), st.integers(-1, 7)),
    p=st.one_of(st.none(), st.sampled_from([0.0, 0.3, 0.5, 0.75, 0.9, 1.0, NAN])),
    min_p=st.one_of(st.none(), st.sampled_from([0.0, 0.1, 0.5, 1.0, 2.0])),
    temperature=st.one_of(st.none(), st.sampled_from([0.0, 0.5, 1.0, 2.5])),
    u=st.floats(0, 1, exclude_max=True),
)
def test_injected_uniforms_match_brute_force(row, k, p, min_p, temperature, u):
    x = np.asarray(row, dtype=np.float32)
    tok, lp = ref.sample_with_uniforms(
        x, u, k, p, min_p=min_p, temperature=temperature, return_logprob=True
    )
    want, pr = brute(row, k, p, min_p, temperature, u)
    probs = ref.probs(x, k, p, min_p=min_p, temperature=temperature, dtype=np.float64)
    assert set(np.flatnonzero(probs)) == {i for i, q in pr.items() if q > 0}
    for i, q in pr.items():
        assert probs[i] == pytest.approx(q, rel=1e-12, abs=1e-300)
    # the rank-order cumulative boundaries; skip draws that land within 1e-9 of one
    cum = np.cumsum([pr[i] for i in oracle.order(x.astype(np.float64)) if i in pr])
    if want is None or np.any(np.abs(cum - u) < 1e-9):
        return
    assert int(tok) == want
    assert tok.shape == () and tok.dtype == np.int64 and lp.dtype == np.float32
    assert float(lp) == pytest.approx(math.log(pr[want]), rel=1e-6, abs=1e-6)


def test_inverse_cdf_walks_the_rank_order():
    x = np.array([0.0, np.log(3.0), np.log(2.0), np.log(4.0)])  # probs 0.1, 0.3, 0.2, 0.4
    # rank order 3, 1, 2, 0 -> cumulative 0.4, 0.7, 0.9, 1.0
    cases = [(0.0, 3), (0.39, 3), (0.41, 1), (0.69, 1), (0.71, 2), (0.89, 2), (0.91, 0), (0.999, 0)]
    for u, tok in cases:
        assert int(ref.sample_with_uniforms(x, u)) == tok


# ---------------------------------------------------------------------------------------------
# greedy


@pytest.mark.parametrize(
    "row,tok",
    [
        ([1.0, 3.0, 3.0, NAN], 1),
        ([NAN, 2.0, 2.0], 1),
        ([NAN, NAN], 0),
        ([-INF, NAN], 0),
        ([NAN, -INF, -INF], 1),
        ([-0.0, 0.0], 0),
        ([1.0, INF, INF], 1),
        ([-INF, -INF], 0),
    ],
)
@pytest.mark.parametrize("u", [0.0, 0.5, 1 - 2**-24])
def test_temperature_zero_is_first_of_the_order(row, tok, u):
    x = np.asarray(row, dtype=np.float32)
    got, lp = ref.sample_with_uniforms(
        x, u, 1, 0.5, min_p=0.5, temperature=0.0, return_logprob=True
    )
    assert int(got) == tok and float(lp) == 0.0
    probs = ref.probs(x, temperature=0.0)
    assert probs[tok] == 1.0 and probs.sum() == 1.0


def test_per_row_temperature_not_positive_is_greedy():
    x = np.tile(np.array([0.0, 1.0, 2.0, 2.0], dtype=np.float32), (4, 1))
    t = np.array([0.0, -1.0, NAN, 1.0])
    got = ref.sample_with_uniforms(x, 0.0, temperature=t)
    assert got[:3].tolist() == [2, 2, 2]
    assert got[3] == 2  # u = 0: first entry of positive mass
    assert int(ref.sample_with_uniforms(x[3], 0.999, temperature=1.0)) == 0


# ---------------------------------------------------------------------------------------------
# goodness of fit and support

ROW = np.array([0.3, 2.0, -1.0, 1.0, 1.7, 0.0, -0.4, 1.0], dtype=np.float32)
FILTERS = [
    dict(),
    dict(k=4),
    dict(p=0.8),
    dict(min_p=0.2),
    dict(k=5, p=0.9),
    dict(k=6, p=0.95, min_p=0.1),
    dict(temperature=0.6, k=5),
    dict(temperature=2.0, p=0.7, min_p=0.3),
]
N_DRAWS = 20_000


@pytest.mark.parametrize(
    "filters", FILTERS, ids=lambda f: ",".join(f"{a}={b}" for a, b in f.items()) or "none"
)
def test_goodness_of_fit_and_support(filters):
    from scipy.stats import chisquare

    k, p = filters.get("k"), filters.get("p")
    kw = {n: filters[n] for n in ("min_p", "temperature") if n in filters}
    x = np.broadcast_to(ROW, (N_DRAWS, ROW.size))
    tokens = ref.sample(x, k, p, seed=2026, offset=np.arange(N_DRAWS, dtype=np.uint64), **kw)
    probs = ref.probs(ROW, k, p, dtype=np.float64, **kw)
    kept = np.flatnonzero(probs)
    assert np.isin(tokens, kept).all()  # support: never outside the kept set
    counts = np.bincount(tokens, minlength=ROW.size)[kept]
    assert np.all(counts > 0)
    if kept.size > 1:
        res = chisquare(counts, probs[kept] * N_DRAWS)
        assert res.pvalue > 1e-6, (filters, counts, probs[kept] * N_DRAWS)


def test_support_on_rows_with_special_values():
    rng = np.random.default_rng(3)
    x = rng.choice(np.array(VALUES, dtype=np.float32), size=(300, 7))
    x[::7] = rng.normal(size=7)
    k = rng.integers(0, 8, size=300)
    p = rng.choice([0.3, 0.8, 1.0], size=300)
    m = rng.choice([0.0, 0.2], size=300)
    for offset in range(5):
        tok = ref.sample(x, k, p, min_p=m, seed=11, offset=offset)
        probs = ref.probs(x, k, p, min_p=m, dtype=np.float64)
        assert np.all(probs[np.arange(300), tok] > 0)
        assert np.allclose(probs.sum(axis=1), 1.0, rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# reproducibility


def test_reproducible_and_batch_invariant():
    rng = np.random.default_rng(5)
    row = rng.normal(size=50).astype(np.float32)
    alone = [ref.sample(row, 10, 0.9, seed=99, offset=o, return_logprob=True) for o in range(20)]
    again = [ref.sample(row, 10, 0.9, seed=99, offset=o, return_logprob=True) for o in range(20)]
    assert [(int(a), float(b)) for a, b in alone] == [(int(a), float(b)) for a, b in again]
    assert len({int(a) for a, _ in alone}) > 1  # different offsets, different draws
    for o in (0, 7, 19):
        batch = rng.normal(size=(256, 50)).astype(np.float32)
        batch[137] = row
        seeds = rng.integers(0, 2**63, size=256)
        seeds[137] = 99
        offs = rng.integers(0, 2**63, size=256)
        offs[137] = o
        ks = rng.integers(0, 50, size=256)
        ks[137] = 10
        ps = rng.uniform(size=256)
        ps[137] = 0.9
        tok, lp = ref.sample(batch, ks, ps, seed=seeds, offset=offs, return_logprob=True)
        assert (int(tok[137]), float(lp[137])) == (int(alone[o][0]), float(alone[o][1]))


# ---------------------------------------------------------------------------------------------
# probabilities and candidates


@given(
    rows=st.lists(
        st.lists(st.sampled_from(VALUES), min_size=5, max_size=5), min_size=1, max_size=4
    ),
    k=st.one_of(st.none(), st.integers(-1, 6)),
    p=st.one_of(st.none(), st.sampled_from([0.0, 0.4, 0.8, 1.0])),
    temperature=st.sampled_from([None, 0.5, 3.0]),
)
def test_probs_and_candidates_follow_the_oracle(rows, k, p, temperature):
    x = np.asarray(rows, dtype=np.float32)
    t = 1.0 if temperature is None else temperature
    scaled = x.astype(np.float64) / t
    keep = oracle.keep_mask(scaled, k, p)
    assert np.array_equal(ref.keep_mask(x, k, p, temperature=temperature), keep)
    probs = ref.probs(x, k, p, temperature=temperature)
    assert probs.dtype == np.float32
    assert not np.any(probs[~keep])
    assert np.allclose(probs.astype(np.float64).sum(axis=1), 1.0, rtol=0, atol=1e-6)
    cand = ref.candidates(x, k, p, temperature=temperature)
    ordr = oracle.order(scaled)
    for b in range(x.shape[0]):
        kept = ordr[b][keep[b, ordr[b]]]
        n = kept.size
        assert cand.counts[b] == n
        assert cand.indices[b, :n].tolist() == kept.tolist()
        assert np.all(cand.indices[b, n:] == -1) and np.all(cand.probs[b, n:] == 0)
        assert np.array_equal(cand.probs[b, :n], probs[b, kept])


def test_candidates_max_candidates_and_min_p():
    x = np.array([[0.0, 3.0, 2.0, 1.0], [5.0, 5.0, 5.0, 5.0]], dtype=np.float64)
    c = ref.candidates(x, max_candidates=2)
    assert c.indices.tolist() == [[1, 2], [0, 1]]
    assert c.counts.tolist() == [4, 4]
    assert c.probs.dtype == np.float64 and c.probs[1].tolist() == [0.25, 0.25]
    c = ref.candidates(x, min_p=float(np.exp(-1.5)))
    assert c.counts.tolist() == [2, 4]
    assert c.indices[0].tolist() == [1, 2, -1, -1]
    one = ref.candidates(x[0], k=1)
    assert one.indices.tolist() == [1, -1, -1, -1] and one.counts.shape == ()


# ---------------------------------------------------------------------------------------------
# edge rows


def test_edge_rows():
    x = np.array(
        [
            [-INF, -INF, -INF, -INF],  # mass undefined: the first entry of the order
            [NAN, NAN, NAN, NAN],
            [NAN, -INF, NAN, -INF],
            [1.0, INF, 0.0, INF],  # +inf entries share the mass
            [2.0, 2.0, 2.0, 2.0],  # all equal: uniform
            [NAN, 1.0, -INF, 0.0],  # NaN and -inf have probability 0
        ],
        dtype=np.float32,
    )
    probs = ref.probs(x, dtype=np.float64)
    assert probs.tolist() == [
        [1, 0, 0, 0],
        [1, 0, 0, 0],
        [0, 1, 0, 0],
        [0, 0.5, 0, 0.5],
        [0.25] * 4,
        probs[5].tolist(),
    ]
    assert probs[5, 0] == 0 and probs[5, 2] == 0 and probs[5, 1] > probs[5, 3] > 0
    for u in (0.0, 0.3, 0.6, 0.999):
        tok, lp = ref.sample_with_uniforms(x, u, return_logprob=True)
        assert tok[:3].tolist() == [0, 0, 1] and lp[:3].tolist() == [0, 0, 0]
        assert tok[3] in (1, 3) and tok[5] in (1, 3)
    assert ref.sample_with_uniforms(x[4], 0.6).item() == 2
    assert ref.sample_with_uniforms(x[3], 0.6).item() == 3
    assert ref.sample_with_uniforms(x[3], 0.49).item() == 1


@pytest.mark.parametrize(
    "k,p,kept",
    [
        (0, None, [3, 1, 2, 0]),
        (4, None, [3, 1, 2, 0]),
        (9, None, [3, 1, 2, 0]),
        (-2, None, [3, 1, 2, 0]),
        (1, None, [3]),
        (None, 0.0, [3]),
        (None, -1.0, [3]),
        (None, 1.0, [3, 1, 2, 0]),
        (None, NAN, [3, 1, 2, 0]),
        (None, 0.4, [3]),
        (None, 0.4000001, [3, 1]),
        (2, 0.99, [3, 1]),
    ],
)
def test_k_p_edges(k, p, kept):
    x = np.array([0.0, np.log(3.0), np.log(2.0), np.log(4.0)])  # probs 0.1, 0.3, 0.2, 0.4
    c = ref.candidates(x, k, p)
    assert c.indices[: int(c.counts)].tolist() == kept


def test_min_p_edges():
    x = np.array([0.0, np.log(3.0), np.log(2.0), np.log(4.0)])  # ratio to max: .25 .75 .5 1
    assert ref.keep_mask(x, min_p=0.5).tolist() == [False, True, True, True]
    assert ref.keep_mask(x, min_p=0.25).tolist() == [True] * 4
    assert ref.keep_mask(x, min_p=1.0).tolist() == [False, False, False, True]
    assert ref.keep_mask(x, min_p=5.0).tolist() == [False, False, False, True]
    assert ref.keep_mask(x, min_p=NAN).tolist() == [True] * 4
    assert ref.keep_mask(x, min_p=-1.0).tolist() == [True] * 4
    # min-p is applied after top-k: the maximum is over the survivors, ratios unchanged
    assert ref.keep_mask(x, 2, min_p=0.76).tolist() == [False, False, False, True]
    # min_p > 0 drops zero-probability entries (-inf, NaN)
    y = np.array([1.0, -INF, NAN])
    assert ref.keep_mask(y, min_p=1e-9).tolist() == [True, False, False]
    assert ref.keep_mask(y).tolist() == [True, True, True]


# ---------------------------------------------------------------------------------------------
# the rejection draw of top-p (qrita.sample's draw for rows whose top-k is off)


def test_round_uniforms_extend_the_uniform():
    """Round 0 is the sampler's uniform; rounds 1-3 are the other words of the same Philox call,
    round 4 the first word of the next counter (counter word 3 = 1)."""
    seeds = np.array([0, 1, 2**63 + 5, 2**64 - 1], dtype=np.uint64)
    offsets = np.array([0, 7, 2**40, 3], dtype=np.uint64)
    assert np.array_equal(ref.round_uniform(seeds, offsets, 0), ref.uniforms(seeds, offsets))
    words = ref.random_words(seeds, offsets)
    for r in range(1, 4):
        assert np.array_equal(ref.round_uniform(seeds, offsets, r),
                              (words[r] >> np.uint32(8)).astype(np.float64) * 2.0**-24)
    s32 = [(seeds & np.uint64(0xFFFFFFFF)).astype(np.uint32), (seeds >> np.uint64(32)).astype(np.uint32)]
    nxt = ref.philox4x32((offsets & np.uint64(0xFFFFFFFF)).astype(np.uint32),
                         (offsets >> np.uint64(32)).astype(np.uint32), 0, 1, *s32)
    assert np.array_equal(ref.round_uniform(seeds, offsets, 5),
                          (nxt[1] >> np.uint32(8)).astype(np.float64) * 2.0**-24)
    assert len(set(ref.round_uniform(5, 9, r).item() for r in range(12))) == 12


@pytest.mark.parametrize("p,temperature,min_p", [(0.8, None, None), (0.3, None, None),
                                                 (0.0, None, None), (None, None, None),
                                                 (0.7, 2.0, None), (0.95, 0.5, 0.1),
                                                 (None, None, 0.2)])
def test_rejection_draw_goodness_of_fit_and_support(p, temperature, min_p):
    """The rejection draw's tokens follow the top-p distribution (chi-square, alpha 1e-6) and
    never leave its support; rows that reject (two or more draws) occur."""
    from scipy.stats import chisquare

    n = N_DRAWS // 2
    x = np.broadcast_to(ROW, (n, ROW.size))
    tokens, trace = ref.sample_topp_rejection(
        x, p, temperature=temperature, min_p=min_p, seed=77,
        offset=np.arange(n, dtype=np.uint64), return_trace=True)
    probs = ref.probs(ROW, None, p, temperature=temperature, min_p=min_p, dtype=np.float64)
    kept = np.flatnonzero(probs)
    assert np.isin(tokens, kept).all()
    counts = np.bincount(tokens, minlength=ROW.size)[kept]
    assert np.all(counts > 0)
    if kept.size > 1:
        res = chisquare(counts, probs[kept] * n)
        assert res.pvalue > 1e-6, (p, counts, probs[kept] * n)
    if p is not None or min_p is not None:
        assert (trace.rounds >= 2).sum() > n // 50
    else:
        assert np.all(trace.rounds == 1)


def test_rejection_draw_edge_rows():
    """Greedy rows, undefined mass (every entry -inf or NaN), +inf rows (their +inf entries share
    the mass), ties at the top-p boundary (lower index first) and p = 0 (the first entry)."""
    inf, nan = np.inf, np.nan
    rows = np.array([
        [0.0, 1.0, 1.0, -inf, nan],
        [-inf, -inf, nan, -inf, -inf],
        [nan, nan, nan, nan, nan],
        [1.0, inf, 3.0, inf, nan],
        [2.0, 2.0, 2.0, 2.0, 2.0],
        [5.0, 1.0, 5.0, 0.0, 5.0],
    ], dtype=np.float32)
    B = rows.shape[0]
    for offset in range(40):
        tok = ref.sample_topp_rejection(rows, 0.5, seed=3, offset=offset)
        assert tok[1] == 0 and tok[2] == 0  # undefined mass: the first entry of the order
        assert tok[3] in (1, 3)
        assert tok[4] in (0, 1, 2)  # 0.5 of five equal entries: the first three (before < 0.5)
        assert tok[5] in (0, 2)  # two of three tied fives make 2/3 > 0.5: the first two
        assert ref.keep_mask(rows, None, 0.5)[np.arange(B), tok].all()
    assert np.all(ref.sample_topp_rejection(rows, 0.0, seed=1) == [1, 0, 0, 1, 0, 0])
    assert np.all(ref.sample_topp_rejection(rows, 0.9, temperature=0.0) == [1, 0, 0, 1, 0, 0])
    assert ref.sample_topp_rejection(rows[0], 0.9, seed=4).shape == ()


def test_temperatures_are_clamped_into_the_range_that_keeps_the_order():
    """docs/sampling.md item 1: a temperature > 0 acts as if clamped into [1e-30, 1e30] (so x / t
    of 16/32-bit logits never overflows into new ties); greedy values are untouched."""
    t, _ = ref.row_sampling_params(np.array([1e-40, 1e40, np.inf, 0.5, 0.0, -1.0, np.nan]), None, 7)
    np.testing.assert_array_equal(t[:5], [1e-30, 1e30, 1e30, 0.5, 0.0])
    assert t[5] == -1.0 and np.isnan(t[6])
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((6, 40)) * 1e3).astype(np.float32)
    seeds = np.arange(6, dtype=np.uint64)
    for small, edge in ((1e-45, 1e-30), (np.inf, 1e30), (1e300, 1e30)):
        for k in (None, 5):
            got = ref.sample(x, k, 0.9, temperature=np.full(6, small), seed=seeds,
                             return_logprob=True)
            want = ref.sample(x, k, 0.9, temperature=np.full(6, edge), seed=seeds,
                              return_logprob=True)
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_array_equal(got[1], want[1])
        np.testing.assert_array_equal(ref.probs(x, None, 0.9, temperature=np.full(6, small)),
                                      ref.probs(x, None, 0.9, temperature=np.full(6, edge)))
