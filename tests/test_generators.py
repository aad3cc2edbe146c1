"""qrita.testing.generators: deterministic, documented shapes/dtypes, and the promised properties."""

from __future__ import annotations

import math

import numpy as np
import pytest

from qrita.reference import oracle
from qrita.testing import generators as gen


def test_deterministic_and_shapes():
    for fn, args in [
        (gen.zipf_logits, (3, 17, 1.1)),
        (gen.gaussian_logits, (3, 17, 2.0)),
        (gen.grammar_rows, (3, 17, 0.5)),
        (gen.sorted_rows, (3, 17, True)),
        (gen.peaked_rows, (3, 17, 100.0)),
        (gen.extreme_rows, (3, 17)),
        (gen.tied_boundary_rows, (3, 17, 5, 3)),
    ]:
        a = fn(*args, rng=np.random.default_rng(9))
        b = fn(*args, rng=np.random.default_rng(9))
        assert a.shape == (3, 17) and a.dtype == np.float32 and a.flags.c_contiguous
        np.testing.assert_array_equal(a, b)
    c1 = [(c.name, c.logits.tobytes(), str(c.k), str(c.p)) for c in gen.cases((3, 50), seed=4)]
    c2 = [(c.name, c.logits.tobytes(), str(c.k), str(c.p)) for c in gen.cases((3, 50), seed=4)]
    assert c1 == c2
    c3 = [c.logits.tobytes() for c in gen.cases((50,), ("float32",), seed=5, families=["gaussian"])]
    assert (
        c3[0]
        != [
            c.logits.tobytes()
            for c in gen.cases((50,), ("float32",), seed=4, families=["gaussian"])
        ][0]
    )


def test_zipf_and_gaussian():
    x = gen.zipf_logits(4, 1000, 1.1, 0)
    # every row is a permutation of the same log-probabilities, which sum to 1
    s = np.sort(x, axis=1)
    assert np.all(s == s[0])
    assert abs(np.exp(x[0].astype(np.float64)).sum() - 1) < 1e-4
    assert not np.array_equal(x[0], x[1])
    r = np.sort(x[0])[::-1].astype(np.float64)
    np.testing.assert_allclose(r[0] - r[9], 1.1 * math.log(10), rtol=1e-5)
    g = gen.gaussian_logits(2, 100_000, 2.0, 1)
    assert abs(g.std() - 2.0) < 0.05 and abs(g.mean()) < 0.05


def test_quantised_bf16_and_dtypes():
    x = gen.gaussian_logits(3, 1000, 2.0, 2)
    q = gen.quantised(x, 8)
    assert q.dtype == np.float32 and all(len(np.unique(r)) <= 8 for r in q)
    assert all(len(np.unique(r)) == 1 for r in gen.quantised(x, 1))
    y = x.copy()
    y[0, :3] = [np.inf, -np.inf, np.nan]
    qy = gen.quantised(y, 4)
    assert qy[0, 0] == np.inf and qy[0, 1] == -np.inf and np.isnan(qy[0, 2])
    ml = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(3)
    z = np.concatenate(
        [
            rng.standard_normal(50_000).astype(np.float32) * 1e3,
            rng.integers(0, 2**32, 50_000, dtype=np.uint64).astype(np.uint32).view(np.float32),
            np.array([np.inf, -np.inf, 3.4e38, -0.0, 1e-45], np.float32),
        ]
    )
    got = gen.bf16_round(z)
    assert got.dtype == np.float32
    with np.errstate(invalid="ignore", over="ignore"):
        want = z.astype(ml.bfloat16).astype(np.float32)
    nan = np.isnan(z)
    assert np.array_equal(got.view(np.uint32)[~nan], want.view(np.uint32)[~nan])
    assert np.isnan(got[nan]).all()
    assert gen.to_dtype(x, "float16").dtype == np.float16
    assert np.array_equal(gen.to_dtype(x, "bfloat16"), gen.bf16_round(x))
    with pytest.raises(ValueError):
        gen.to_dtype(x, "int8")


def test_adversarial_rows():
    V = 1000
    assert np.all(gen.all_equal_rows(2, V, 1.5) == 1.5)
    for frac, n in [(0.5, 500), (0.999, 999), (1.0, 1000)]:
        g = gen.grammar_rows(2, V, frac, 0)
        assert np.all((g == -np.inf).sum(axis=1) == n)
    assert np.all(np.isnan(gen.inject_nan(gen.gaussian_logits(2, V, 2.0, 0), 0.1, 0)).sum(1) == 100)
    assert np.all(
        (gen.inject_posinf(gen.gaussian_logits(2, V, 2.0, 0), 3, 0) == np.inf).sum(1) == 3
    )
    # tied boundary: the k-th value of the order is repeated on both sides of the boundary
    k = 50
    t = gen.tied_boundary_rows(3, V, k, 7, 0)
    for row in t:
        s = np.sort(row)[::-1]
        assert s[k - 1] == s[k - 2] == s[k] and (s == s[k - 1]).sum() == 7
    z = gen.five_zeros_rows(1, 10)
    assert z[0].tolist() == [5.0] + [0.0] * 9
    assert np.flatnonzero(oracle.top_k_mask(z, 3)[0] != -np.inf).tolist() == [0, 1, 2]
    a = gen.sorted_rows(2, V, True, 0)
    assert np.all(np.diff(a, axis=1) >= 0)
    d = gen.sorted_rows(2, V, False, 0)
    assert np.all(np.diff(d, axis=1) <= 0)
    pk = gen.peaked_rows(2, V, 100.0, 0)
    for row in pk:
        s = np.sort(row)[::-1]
        assert s[0] - s[1] >= 99.0
        assert np.exp(s[1] - s[0]) < 1e-40  # the rest underflows float32 without care
    e = gen.extreme_rows(1, V, 0)
    assert np.isin(np.finfo(np.float32).max, e) and np.any(np.signbit(e) & (e == 0))
    tl = gen.two_level_rows(1, 10, 3, 2.0)
    assert tl[0].tolist() == [2.0] * 3 + [0.0] * 7


def test_cases_cover_the_grid():
    names, ks, ps, dtypes, fams = set(), set(), set(), set(), set()
    arrays_k = arrays_p = combos = 0
    for c in gen.cases((1, 2, 3, 1023), seed=0):
        assert isinstance(c, gen.Case) and c.name not in names
        names.add(c.name)
        fam, vpart, dtype = c.name.split("/")[:3]
        V = int(vpart[2:])
        assert c.logits.ndim == 2 and c.logits.shape[1] == V
        assert c.logits.dtype == (np.float16 if dtype == "float16" else np.float32)
        if dtype == "bfloat16":
            assert (
                np.array_equal(
                    gen.bf16_round(c.logits).view(np.uint32),
                    c.logits.view(np.uint32),
                )
                or np.isnan(c.logits).any()
            )
        dtypes.add(dtype)
        fams.add(fam)
        if isinstance(c.k, np.ndarray):
            assert c.k.shape == (c.logits.shape[0],) and c.k.dtype == np.int64
            arrays_k += 1
        elif c.k is not None:
            ks.add(c.k - V if c.k >= V - 1 else c.k)
        if isinstance(c.p, np.ndarray):
            assert c.p.shape == (c.logits.shape[0],) and c.p.dtype == np.float64
            arrays_p += 1
        elif c.p is not None:
            ps.add("nan" if math.isnan(c.p) else c.p)
        if c.k is not None and c.p is not None:
            combos += 1
    assert dtypes == {"float32", "float16", "bfloat16"}
    assert fams == set(gen.FAMILIES)
    assert {0, 1, 50, -1, 5, 3} <= ks  # 0, 1, V-1 (-> -1), V (-> 0), V+5 (-> 5), 50; 3
    assert {0.0, 1e-9, 0.5, 1 - 1e-7, 1.0, "nan"} <= ps
    assert arrays_k and arrays_p and combos
    assert len(names) > 3000
