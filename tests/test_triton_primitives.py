"""The shared ``@triton.jit`` steps (qrita/backends/triton/primitives.py) against each other.

``count_search_radix`` (four byte histograms; opt-in with QRITA_RADIX=1) answers what the pivot
rounds of ``search_in_registers`` answer for top-k's boundary key: both run here in one small kernel on the same
keys, and must give the same key for every target, interval and membership, including the edge
cases (no member, target <= 0, target above the member count, ties, NaN keys, +-inf, -0.0).
The mass predicate of ``search_in_registers`` (top-p) is checked against a NumPy search on
weights whose sums are exact.
"""

from __future__ import annotations

import numpy as np
import pytest
from _triton_env import DEVICE, torch, triton  # first: sets up triton

from qrita.backends.triton.primitives import (  # noqa: E402
    KEY_FLOOR,
    KEY_INF,
    KEY_MAX,
    KEY_NAN,
    SEARCH_SPLIT,
    count_search_radix,
    lower_bound_value,
    order_key,
    packed_prefix_counts,
    sample_cutoff_key,
    sample_moments,
    sample_offsets,
    search_in_registers,
    upper_bound_value,
    upper_normal_quantile,
)
from qrita.reference.keys import order_key as order_key_host  # noqa: E402
from qrita.testing import generators  # noqa: E402

tl = triton.language

N = 64


@triton.jit
def _both_searches_kernel(x_ptr, member_ptr, params_ptr, out_ptr, N: tl.constexpr):
    lanes = tl.arange(0, N)
    keys = order_key(tl.load(x_ptr + lanes))
    member = tl.load(member_ptr + lanes) != 0
    lo = tl.load(params_ptr + 0)
    hi = tl.load(params_ptr + 1)
    base = tl.load(params_ptr + 2).to(tl.int32)
    target = tl.load(params_ptr + 3).to(tl.int32)
    zero_f = base.to(tl.float32) * 0.0
    by_rounds, r = search_in_registers(keys, keys.to(tl.float32), member, lo, hi, base, zero_f,
                                       target, zero_f, False)
    by_radix, passes = count_search_radix(keys, member, lo, hi, base, target)
    by_fused, r_fused = search_in_registers(keys, keys.to(tl.float32), member, lo, hi, base,
                                            zero_f, target, zero_f, False, FUSED=True)
    by_loop, r_loop = search_in_registers(keys, keys.to(tl.float32), member, lo, hi, base,
                                          zero_f, target, zero_f, False, FUSED=False)
    by_split, r_split = search_in_registers(keys, keys.to(tl.float32), member, lo, hi, base,
                                            zero_f, target, zero_f, False, FUSED=False,
                                            SPLIT=True)
    tl.store(out_ptr + 6, by_split)
    tl.store(out_ptr + 7, r_split)
    tl.store(out_ptr + 0, by_rounds)
    tl.store(out_ptr + 1, by_radix)
    tl.store(out_ptr + 2, by_fused)
    tl.store(out_ptr + 3, r_fused)
    tl.store(out_ptr + 4, by_loop)
    tl.store(out_ptr + 5, r_loop)


def _rows(rng: np.random.Generator):
    """(values, member) pairs: spread values, heavy ties, signed zeros, infinities, NaN."""
    yield rng.standard_normal(N).astype(np.float32), rng.random(N) < 0.8
    yield rng.integers(-3, 4, N).astype(np.float32), np.ones(N, bool)
    tied = np.full(N, 1.5, np.float32)
    tied[::7] = -0.0
    tied[1::9] = 0.0
    yield tied, np.ones(N, bool)
    odd = rng.standard_normal(N).astype(np.float32)
    odd[:4] = [np.inf, -np.inf, np.nan, -np.inf]
    yield odd, ~np.isnan(odd)
    yield rng.standard_normal(N).astype(np.float32) * 1e-30, rng.random(N) < 0.3
    yield rng.standard_normal(N).astype(np.float32), np.zeros(N, bool)
    # consecutive keys (1.0 and the floats just above it, shuffled): pivots land on keys, so a
    # pivot test off by one key (>= for >) gives another boundary
    yield rng.permutation((np.int32(0x3F800000) + np.arange(N, dtype=np.int32)).view(np.float32)), \
        np.ones(N, bool)


def test_radix_count_search_equals_pivot_rounds():
    """Also the fused rounds (one reduction per round, QRITA_SEARCH_FUSED) and the split
    rounds (one reduction per pivot, SPLIT) against the loop form: the same key in the same
    number of rounds."""
    rng = np.random.default_rng(7)
    out = torch.zeros(8, dtype=torch.int32, device=DEVICE)
    checked = 0
    rounds_seen = set()
    for x, member in _rows(rng):
        keys = np.sort(order_key_host(x)[member])
        # intervals: everything, and cuts at occupied keys (the fallback's case: keys inside)
        intervals = [(-(2**31) - 1, 2**31 - 1)]
        if keys.size >= 2:
            intervals.append((int(keys[keys.size // 4]) - 1, int(keys[-1])))
            intervals.append((int(keys[1]), int(keys[keys.size // 2])))
        for lo, hi in intervals:
            for base in (0, 3):
                for target in (-1, 0, 1, 2, 5, N // 2, N - 1, N, N + 5):
                    params = torch.tensor([lo, hi, base, target], dtype=torch.int64,
                                          device=DEVICE)
                    _both_searches_kernel[(1,)](
                        torch.from_numpy(x).to(DEVICE),
                        torch.from_numpy(member.astype(np.int32)).to(DEVICE), params, out, N=N)
                    (by_rounds, by_radix, by_fused, r_fused, by_loop, r_loop, by_split,
                     r_split) = out.tolist()
                    assert by_radix == by_rounds, (x, member, lo, hi, base, target)
                    assert (by_fused, r_fused) == (by_loop, r_loop), (x, member, lo, hi, base,
                                                                      target)
                    assert (by_split, r_split) == (by_loop, r_loop), (x, member, lo, hi, base,
                                                                      target)
                    assert by_loop == by_rounds
                    rounds_seen.add(r_loop)
                    checked += 1
    assert checked >= 250  # every case above ran
    assert max(rounds_seen) >= 3  # searches of several rounds ran


@pytest.mark.parametrize("k", [1, 2, 17, 63, 64])
def test_radix_count_search_is_the_kth_largest_key(k):
    rng = np.random.default_rng(k)
    x = rng.integers(-5, 6, N).astype(np.float32) * np.float32(0.25)
    out = torch.zeros(8, dtype=torch.int32, device=DEVICE)
    params = torch.tensor([-(2**31) - 1, 2**31 - 1, 0, k], dtype=torch.int64, device=DEVICE)
    _both_searches_kernel[(1,)](torch.from_numpy(x).to(DEVICE),
                                torch.ones(N, dtype=torch.int32, device=DEVICE), params, out, N=N)
    expected = np.sort(order_key_host(x))[::-1][k - 1]
    got = out.tolist()
    assert [got[0], got[1], got[2], got[4], got[6]] == [expected] * 5


@triton.jit
def _mass_search_kernel(x_ptr, w_ptr, member_ptr, params_ptr, out_ptr, N: tl.constexpr):
    lanes = tl.arange(0, N)
    keys = order_key(tl.load(x_ptr + lanes))
    w = tl.load(w_ptr + lanes)
    member = tl.load(member_ptr + lanes) != 0
    lo = tl.load(params_ptr + 0).to(tl.int64)
    hi = tl.load(params_ptr + 1).to(tl.int64)
    base = tl.load(params_ptr + 2)
    target = tl.load(params_ptr + 3)
    zero_i = lo.to(tl.int32) * 0
    T, r = search_in_registers(keys, w, member, lo, hi, zero_i, base, zero_i, target, True)
    T_split, r_split = search_in_registers(keys, w, member, lo, hi, zero_i, base, zero_i, target,
                                           True, SPLIT=True)
    tl.store(out_ptr + 0, T)
    tl.store(out_ptr + 1, r)
    tl.store(out_ptr + 2, T_split)
    tl.store(out_ptr + 3, r_split)


def _mass_boundary(keys, w, lo, hi, base, target):
    """The largest occupied key t in (lo, hi] with base + w(key >= t) >= target; the lowest
    occupied key when none reaches the target; KEY_NAN when (lo, hi] holds no key."""
    inside = (keys > lo) & (keys <= hi)
    occupied = np.unique(keys[inside])[::-1]
    if occupied.size == 0:
        return -(2**31)
    for t in occupied:
        if base + w[keys >= t].sum() >= target:
            return int(t)
    return int(occupied[-1])


def test_mass_search_is_the_top_p_boundary():
    rng = np.random.default_rng(11)
    out = torch.zeros(4, dtype=torch.int32, device=DEVICE)
    checked = 0
    for x, member in _rows(rng):
        # small integer weights: every partial sum is exact in float32, in any order
        w = rng.integers(0, 4, N).astype(np.float32)
        keys_all = order_key_host(x)
        keys = np.where(member, keys_all, -(2**31)).astype(np.int64)
        wm = np.where(member, w, 0)
        occupied = np.sort(keys_all[member])
        intervals = [(-(2**31) - 1, 2**31 - 1)]
        if occupied.size >= 2:
            intervals.append((int(occupied[occupied.size // 4]) - 1, int(occupied[-1])))
        for lo, hi in intervals:
            for base in (0.0, 2.0):
                for target in (0.0, 1.0, 5.0, 20.0, float(wm.sum()), float(wm.sum()) + 9.0):
                    params = torch.tensor([lo, hi, base, target], dtype=torch.float64,
                                          device=DEVICE)
                    _mass_search_kernel[(1,)](
                        torch.from_numpy(x).to(DEVICE), torch.from_numpy(w).to(DEVICE),
                        torch.from_numpy(member.astype(np.int32)).to(DEVICE), params, out, N=N)
                    inside = member & (keys > lo) & (keys <= hi)
                    # entries above hi count through base only in the kernel's caller: here the
                    # predicate sums every member above the pivot, so add those above hi
                    extra = float(wm[member & (keys > hi)].sum())
                    expect = _mass_boundary(keys[inside], wm[inside], lo, hi, base + extra, target)
                    got = out.tolist()
                    assert got[0] == expect, (x, member, w, lo, hi, base, target)
                    assert got[2:4] == got[0:2], (x, member, w, lo, hi, base, target)  # SPLIT
                    checked += 1
    assert checked >= 60


@triton.jit
def _prefix_counts_kernel(flags_ptr, out_ptr, BLOCK: tl.constexpr):
    lanes = tl.arange(0, BLOCK)
    flags = tl.load(flags_ptr + lanes) != 0
    tl.store(out_ptr + lanes, packed_prefix_counts(flags, BLOCK))


@pytest.mark.parametrize("block", [32, 64, 128, 256])
def test_packed_prefix_counts_are_the_cumulative_sum(block):
    """The one-scan prefix counts of a tile (``packed_prefix_counts``, the wide compaction's
    PACKED appends) are ``np.cumsum`` of its flags: none, all (every 8-bit field at its
    largest, 32 per row, 256 in all), one per row at either end, random densities."""
    rng = np.random.default_rng(block)
    tiles = [np.zeros(block, bool), np.ones(block, bool),
             np.arange(block) % 32 == 0, np.arange(block) % 32 == 31]
    tiles += [rng.random(block) < density for density in (0.02, 0.3, 0.9)]
    for flags in tiles:
        got = torch.zeros(block, dtype=torch.int32, device=DEVICE)
        _prefix_counts_kernel[(1,)](torch.tensor(flags.astype(np.int32), device=DEVICE), got,
                                    BLOCK=block, num_warps=1)
        np.testing.assert_array_equal(got.cpu().numpy(), np.cumsum(flags))


@triton.jit
def _bound_values_kernel(x_ptr, bounds_ptr, lower_ptr, upper_ptr, NX: tl.constexpr,
                         NB: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, NX))
    bounds = tl.load(bounds_ptr + tl.arange(0, NB))
    at = tl.arange(0, NX)[:, None] * NB + tl.arange(0, NB)[None, :]
    tl.store(lower_ptr + at, (x[:, None] >= lower_bound_value(bounds)[None, :]).to(tl.int32))
    tl.store(upper_ptr + at, (x[:, None] <= upper_bound_value(bounds)[None, :]).to(tl.int32))


def test_bound_values_are_the_key_compares():
    """``x >= lower_bound_value(c)`` is ``order_key(x) >= c`` and ``x <= upper_bound_value(c)``
    is ``order_key(x) <= c`` for every non-NaN float32 x and int32 key c (the wide
    compaction's LEAN tests), and both are false for NaN (its key is the caller's to test):
    x at every edge (+-0, the subnormals nearest 0, +-tiny, +-max, +-inf, NaN, and their
    neighbours) against bounds at every edge of the key space (NaN's key, the floor, key -1,
    which is no float's, 0, +inf's key, the keys above it, KEY_MAX) and at each x's key +-1."""
    f32 = np.finfo(np.float32)
    edges = np.array([0.0, -0.0, f32.smallest_subnormal, -f32.smallest_subnormal, f32.tiny,
                      -f32.tiny, f32.max, -f32.max, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.5,
                      -2.5, 1e-30, -1e-30], dtype=np.float32)
    with np.errstate(over="ignore"):  # (max's neighbour is inf)
        x = np.concatenate([edges, np.nextafter(edges, np.float32(np.inf)),
                            np.nextafter(edges, np.float32(-np.inf)),
                            np.random.default_rng(7).normal(0, 30, 128).astype(np.float32)])
    x = np.resize(x, 256).astype(np.float32)
    keys = order_key_host(x).astype(np.int64)
    special = np.array([KEY_NAN, KEY_NAN + 1, KEY_FLOOR - 1, KEY_FLOOR, KEY_FLOOR + 1, -3, -2,
                        -1, 0, 1, 2, KEY_INF - 1, KEY_INF, KEY_INF + 1, KEY_MAX - 1, KEY_MAX],
                       dtype=np.int64)
    near = np.concatenate([keys - 1, keys, keys + 1])
    bounds = np.resize(np.unique(np.clip(np.concatenate([special, near]), KEY_NAN, KEY_MAX)),
                       1024).astype(np.int32)
    lower = torch.zeros((x.size, bounds.size), dtype=torch.int32, device=DEVICE)
    upper = torch.zeros_like(lower)
    _bound_values_kernel[(1,)](torch.tensor(x, device=DEVICE), torch.tensor(bounds, device=DEVICE),
                               lower, upper, NX=x.size, NB=bounds.size)
    finite_or_inf = ~np.isnan(x)[:, None]
    b = bounds.astype(np.int64)[None, :]
    np.testing.assert_array_equal(lower.cpu().numpy() == 1, finite_or_inf & (keys[:, None] >= b))
    np.testing.assert_array_equal(upper.cpu().numpy() == 1, finite_or_inf & (keys[:, None] <= b))


@triton.jit
def _top_p_cutoffs_kernel(x_ptr, p_ptr, V, max_cands, out_ptr, SAMPLE: tl.constexpr,
                          OVERSAMPLE: tl.constexpr):
    """Per row: the top-p cutoff key of :func:`sample_cutoff_key`, and the same cutoff computed
    the way it was before a row the Gaussian cutoff sends wide skipped the sample's own search
    (that search always run, the prediction made once from the final key)."""
    row = tl.program_id(0)
    row_x = x_ptr + row * V
    p = tl.load(p_ptr + row)
    zero_i = row * 0
    now = sample_cutoff_key(row_x, V, zero_i, False, p, max_cands, SAMPLE, OVERSAMPLE, False)
    offs, valid = sample_offsets(V, SAMPLE)
    x = tl.load(row_x + offs, mask=valid, other=0.0).to(tl.float32)
    finite = valid & (tl.abs(x) < float("inf"))
    n_valid = tl.minimum(V, SAMPLE)
    n_finite, mean, std = sample_moments(x, finite)
    usable = (n_finite >= 2) & (std > 0.0) & (std < float("inf"))
    keys = order_key(x)
    tail = tl.maximum((1.0 - p) / OVERSAMPLE, 1e-30)
    cut = mean + std * std - std * upper_normal_quantile(tl.minimum(tail, 0.999))
    cut = tl.where(usable, cut, -float("inf"))
    cut_key = order_key(cut)
    gauss_predicted = tl.sum((valid & (keys >= cut_key)).to(tl.float32), axis=0) * V / n_valid
    s_max = tl.max(tl.where(finite, x, -float("inf")), axis=0)
    w = tl.where(finite, tl.exp(tl.where(finite, x, 0.0) - s_max), 0.0)
    s_mass = tl.sum(w, axis=0)
    p_safe = 1.0 - (1.0 - p) / OVERSAMPLE
    if s_mass > 0.0:
        lo = zero_i.to(tl.int64) + KEY_NAN - 1
        hi = zero_i.to(tl.int64) + KEY_MAX
        s_key, r = search_in_registers(keys, w, finite, lo, hi, zero_i, zero_i.to(tl.float32),
                                       zero_i, p_safe * s_mass, True, SPLIT=SEARCH_SPLIT)
        cut_key = tl.minimum(cut_key, s_key)
    predicted = tl.sum((valid & (keys >= cut_key)).to(tl.float32), axis=0) * V / n_valid
    before = tl.where(predicted > 1.5 * max_cands, KEY_MAX, cut_key)
    tl.store(out_ptr + row * 3 + 0, now)
    tl.store(out_ptr + row * 3 + 1, before)
    tl.store(out_ptr + row * 3 + 2, (gauss_predicted > 1.5 * max_cands).to(tl.int32))


@pytest.mark.parametrize("V", [1000, 4099])
def test_top_p_cutoff_skips_the_sample_search_only_where_it_changes_nothing(V):
    """The σ-cutoff of top-p rows skips the sample's own top-p search when the Gaussian cutoff
    already predicts more candidates than the scratch holds (the search can only lower the
    cutoff): on every generator family and p at its edges, and with scratch sizes that send
    rows both ways, the cutoff key is the one the search-always form gives, bit for bit."""
    rng = np.random.default_rng(5)
    rows = np.concatenate([batch for _, batch in generators._family_batches(V, rng)])
    ps = np.array([0.0, 1e-7, 0.5, 0.9, 0.99, 1.0 - 1e-6, 1.0], dtype=np.float32)
    x = torch.from_numpy(np.repeat(rows, ps.size, axis=0)).to(DEVICE)
    p = torch.from_numpy(np.tile(ps, rows.shape[0])).to(DEVICE)
    skipped = searched = 0
    for max_cands in (8.0, 96.0, 3000.0):
        out = torch.zeros((x.shape[0], 3), dtype=torch.int32, device=DEVICE)
        _top_p_cutoffs_kernel[(x.shape[0],)](x, p, V, max_cands, out, SAMPLE=256, OVERSAMPLE=4.0)
        got = out.cpu().numpy()
        bad = np.flatnonzero(got[:, 0] != got[:, 1])
        assert bad.size == 0, (max_cands, bad[:5], got[bad[:5]])
        skipped += int(got[:, 2].sum())
        searched += int((got[:, 2] == 0).sum())
    assert skipped >= 20 and searched >= 20, (skipped, searched)
