"""The keyed band's steps (qrita/backends/triton/wide.py) in small kernels: a 16-bit value's
index (``key >> KEY_SHIFT``) and back (``value_key``), and the values' masses
(``_value_masses``), on every bfloat16 / float16 value kind (negative, -0.0, subnormal, +-inf);
and the wide compaction's LEAN form against its key compares, launched directly on intervals
at every edge of the key space."""

from __future__ import annotations

import numpy as np
import pytest
from _triton_env import DEVICE, ON_GPU, torch, triton  # first: sets up triton

from qrita.backends.triton import wide  # noqa: E402
from qrita.backends.triton.primitives import (  # noqa: E402
    KEY_FLOOR,
    KEY_INF,
    KEY_NAN,
    key_to_value,
    order_key,
)
from qrita.reference.keys import order_key as order_key_host  # noqa: E402

tl = triton.language

BINS = 64
SHIFTS = {"bfloat16": 16, "float16": 13}


@triton.jit
def _round_trip_kernel(x_ptr, key_ptr, back_ptr, value_ptr, KEY_SHIFT: tl.constexpr,
                       N: tl.constexpr):
    lanes = tl.arange(0, N)
    key = order_key(tl.load(x_ptr + lanes).to(tl.float32))
    back = wide.value_key((key >> KEY_SHIFT).to(tl.int64), KEY_SHIFT)
    tl.store(key_ptr + lanes, key)
    tl.store(back_ptr + lanes, back)
    tl.store(value_ptr + lanes, key_to_value(back))


@triton.jit
def _masses_kernel(counts_ptr, params_ptr, out_ptr, KEY_SHIFT: tl.constexpr):
    counts = tl.load(counts_ptr + tl.arange(0, 64))
    first_value = tl.load(params_ptr + 0).to(tl.int64)
    row_max = tl.load(params_ptr + 1).to(tl.float32, bitcast=True)
    inf_mode = tl.load(params_ptr + 2) != 0
    tl.store(out_ptr + tl.arange(0, 64),
             wide._value_masses(counts, first_value, row_max, inf_mode, KEY_SHIFT))


def _values(dtype: str, rng: np.random.Generator) -> torch.Tensor:
    """64 values of the dtype: random bit patterns and the edge kinds. (NaN and subnormals
    replaced by 0: Triton 3.9's interpreter widens bfloat16 subnormals to float32 inexactly,
    e.g. bits 0x000B -> 0x00300000, not 0x000B0000; a GPU shifts the bits.)"""
    bits = rng.integers(0, 1 << 16, size=64, dtype=np.int64).astype(np.uint16)
    x = torch.from_numpy(bits.view(np.int16)).view(getattr(torch, dtype))
    tiny = torch.finfo(x.dtype).tiny
    x = torch.where(torch.isnan(x) | (x.float().abs() < tiny), torch.zeros_like(x), x)
    edges = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), 1.0, -1.0, 1e-7, -1e-7,
                          65504.0, -65504.0, tiny, -tiny], dtype=getattr(torch, dtype))
    x[: edges.numel()] = edges
    return x.to(DEVICE)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_value_index_round_trips(dtype):
    """For every 16-bit value, ``value_key(key >> KEY_SHIFT)`` is its float32 rank key and that
    key's value is the value itself (-0.0 as +0.0): the index names the value."""
    x = _values(dtype, np.random.default_rng(3))
    key, back = (torch.empty(64, dtype=torch.int32, device=DEVICE) for _ in range(2))
    value = torch.empty(64, dtype=torch.float32, device=DEVICE)
    _round_trip_kernel[(1,)](x, key, back, value, KEY_SHIFT=SHIFTS[dtype], N=64)
    want = order_key_host(x.float().cpu().numpy())
    np.testing.assert_array_equal(key.cpu().numpy(), want)
    np.testing.assert_array_equal(back.cpu().numpy(), want)
    expected = x.float().cpu().numpy()
    expected[expected == 0] = 0.0
    np.testing.assert_array_equal(value.cpu().numpy().view(np.int32), expected.view(np.int32))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_value_masses_of_empty_values_are_zero(dtype):
    """A value's mass is its count times its weight, exp(x - max); a value with no copies weighs
    nothing even where exp overflows (values far above the row's max: 0 x inf would be NaN)."""
    shift = SHIFTS[dtype]
    row_max = torch.tensor([8192.0], dtype=getattr(torch, dtype)).float()
    top = int(order_key_host(row_max.numpy())[0]) >> shift
    first_value = top - 2  # bins 0..2: up to the max; bins 3..63: above it
    counts = np.zeros(BINS, dtype=np.int32)
    counts[[0, 2]] = [7, 3]
    params = torch.tensor([first_value, int(row_max.numpy().view(np.int32)[0]), 0],
                          dtype=torch.int32, device=DEVICE)
    out = torch.empty(BINS, dtype=torch.float32, device=DEVICE)
    _masses_kernel[(1,)](torch.from_numpy(counts).to(DEVICE), params, out, KEY_SHIFT=shift)
    got = out.cpu().numpy()
    assert np.isfinite(got).all(), got
    values = np.array([np.float32(torch.tensor(v).float()) for v in
                       [wide_value(first_value + j, shift) for j in (0, 2)]])
    want = counts[[0, 2]] * np.exp(values.astype(np.float64) - 8192.0)
    np.testing.assert_allclose(got[[0, 2]], want, rtol=1e-6)
    assert (got[3:] == 0).all() and got[1] == 0


def wide_value(index: int, shift: int) -> float:
    """The float32 value whose rank key has index ``index`` (``wide.value_key`` on the host)."""
    low = (1 << shift) - 1 if index < 0 else 0
    key = np.int64((index << shift) | low).astype(np.int32)
    bits = key if key >= 0 else key ^ np.int32(0x7FFFFFFF)
    return float(np.array([bits], dtype=np.int32).view(np.float32)[0])


def _lean_rows(dtype: str, rng: np.random.Generator, B: int, V: int) -> np.ndarray:
    """(B, V) float32 rows of the dtype's values: Gaussian values with ties, +-0, -inf and NaN
    entries, +inf in the last row, float32 subnormals and +-max (bfloat16 rows: no subnormals,
    which Triton 3.9's interpreter widens inexactly, see :func:`_values`)."""
    x = rng.normal(0.0, 3.0, size=(B, V)).astype(np.float32)
    x[:, ::7] = np.round(x[:, ::7])  # ties
    f32 = np.finfo(np.float32)
    edges = [0.0, -0.0, -np.inf, np.nan, 1.0, -1.0, 2.0, -2.0]
    if dtype == "float32":
        edges += [f32.smallest_subnormal, -f32.smallest_subnormal, f32.tiny, -f32.tiny,
                  f32.max, -f32.max]
    for b in range(B):
        at = rng.permutation(V)[:60]
        x[b, at] = rng.choice(np.array(edges, dtype=np.float32), size=at.size)
    x[-1, rng.permutation(V)[:3]] = np.inf
    if dtype == "bfloat16":
        x = torch.from_numpy(x).to(torch.bfloat16).float().numpy()
    return x


def _lean_intervals(x: np.ndarray, rng: np.random.Generator, key_shift: int) -> np.ndarray:
    """(B, 2) int64 intervals (lo, hi], one per row: around the row's own keys (+-1, so the
    ends fall on, above and below occupied keys), from NaN's key, at key -1 (no float's), 0,
    +inf's key; 16-bit rows also get bands of a few values (the keyed band: counted)."""
    B = x.shape[0]
    out = np.empty((B, 2), dtype=np.int64)
    fixed = [(KEY_NAN - 1, KEY_INF), (KEY_NAN - 1, -1), (-2, 0), (-1, KEY_INF),
             (KEY_FLOOR - 1, -2), (0, KEY_INF - 1)]
    for b in range(B):
        keys = np.unique(order_key_host(x[b]).astype(np.int64))
        keys = keys[keys > KEY_NAN]
        if b < len(fixed):
            out[b] = fixed[b]
            continue
        i, j = np.sort(rng.choice(keys.size, 2, replace=False))
        if key_shift and b % 2 == 0:  # a band of a few 16-bit values
            j = min(i + int(rng.integers(1, 5)), keys.size - 1)
        out[b] = (keys[i] + int(rng.integers(-1, 1)), keys[j] + int(rng.integers(-1, 2)))
    return out


def _lean_inputs(x: np.ndarray, dtype: str, rng: np.random.Generator, key_shift: int):
    """The rows on the device, their intervals (:func:`_lean_intervals`), maxima of the
    non-NaN, non-+inf entries and +inf flags: what ``wide_compact_kernel`` reads per row."""
    intervals = _lean_intervals(x, rng, key_shift)
    row_max = np.where(np.isfinite(x), x, -np.inf).max(axis=1)
    inf_mode = (x == np.inf).any(axis=1)
    return torch.tensor(x, device=DEVICE).to(getattr(torch, dtype)), intervals, row_max, inf_mode


def _run_compaction(x_dev, intervals, row_max, inf_mode, V, seg_len, nseg, *, band, lean,
                    key_shift, flat, block, unswitch=False, exp2=False, fixed=False, narrow=0):
    """``wide_compact_kernel`` on the rows' intervals (the band when ``band``); its outputs on
    the host. ``fixed``: the masses as int64 fixed-point sums, ``part_f`` then (B, S, 16)
    int64. ``narrow``: the keyed count's NARROW."""
    B = x_dev.shape[0]
    cap_seg, nseg_p2 = 512, 4
    row_i = torch.zeros((B, wide.ROW_I.value), dtype=torch.int32, device=DEVICE)
    row_i[:, 0] = 3
    row_i[:, 5] = torch.tensor(intervals[:, 0] + 1, dtype=torch.int32)
    row_i[:, 6] = torch.tensor(intervals[:, 1].clip(-(2**31), 2**31 - 1), dtype=torch.int32)
    row_f = torch.zeros((B, wide.ROW_F.value), dtype=torch.float32, device=DEVICE)
    row_f[:, 0] = torch.tensor(row_max)
    row_f[:, 2] = torch.tensor(inf_mode.astype(np.float32))
    out = dict(
        cand_val=torch.zeros((B, nseg_p2 * cap_seg), dtype=torch.float32, device=DEVICE),
        cand_idx=torch.zeros((B, nseg_p2 * cap_seg), dtype=torch.int32, device=DEVICE),
        seg_i=torch.zeros((B, nseg, wide.SEG_I.value), dtype=torch.int32, device=DEVICE),
        part_i=torch.zeros((B, nseg, wide.KEY_PART.value), dtype=torch.int32, device=DEVICE),
        part_f=torch.zeros((B, nseg, wide.WAYS.value * (2 if fixed else 1)),
                           dtype=torch.float32, device=DEVICE))
    miss = torch.zeros(2 + B, dtype=torch.int32, device=DEVICE)
    if not band:  # the listed rows: all of them
        miss[0] = B
        miss[1:1 + B] = torch.arange(B, dtype=torch.int32)
    wide.wide_compact_kernel[(B, nseg)](
        x_dev, row_i, row_f, V, x_dev.stride(0), seg_len, out["cand_val"], out["cand_idx"],
        out["seg_i"], out["part_i"], out["part_f"], miss, BLOCK=block, CAP_SEG=cap_seg,
        NSEG_P2=nseg_p2, SPARSE=4, BAND=band, FLAT=flat, KEY_SHIFT=key_shift if band else 0,
        LISTED=not band, AHEAD=1, LEAN=lean, UNSWITCH=unswitch, EXP2=exp2, FIXED=fixed,
        NARROW=narrow, num_warps=1)
    if fixed:
        out["part_f"] = out["part_f"].view(torch.int64)
    return {name: t.cpu().numpy() for name, t in out.items()}


@pytest.mark.parametrize("dtype,band,flat", [("float32", True, True), ("float32", False, False),
                                             ("bfloat16", True, False)])
def test_lean_compaction_is_the_key_compaction(dtype, band, flat):
    """``wide_compact_kernel`` with LEAN (the launch table's ``widelean``: float compares
    against the bounds' values, NaN-padded tiles, unguarded weights; and ``wideunswitch``: the
    loop without NaN terms where no NaN key is reached) writes exactly what its
    key compares write: the same candidates in the same slots, counts, counts and masses above
    the band (bit for bit) and, for a keyed 16-bit band, the same counts per value; on rows
    with ties, +-0, -inf, NaN, +inf, subnormals and +-max, and intervals at every edge of the
    key space; the last tile past V."""
    rng = np.random.default_rng(29)
    B, V, seg_len, block = 16, 1000, 256, 32
    nseg = -(-V // seg_len)
    key_shift = SHIFTS.get(dtype, 0)
    x_dev, intervals, row_max, inf_mode = _lean_inputs(_lean_rows(dtype, rng, B, V), dtype,
                                                       rng, key_shift)
    # LEAN with UNSWITCH (``wideunswitch``: rows whose interval and band reach no NaN key run a
    # loop without the NaN terms; the intervals from NaN's key here take the other loop)
    got = {lean: _run_compaction(x_dev, intervals, row_max, inf_mode, V, seg_len, nseg,
                                 band=band, lean=lean, key_shift=key_shift, flat=flat,
                                 block=block, unswitch=lean)
           for lean in (False, True)}
    for name in got[False]:
        np.testing.assert_array_equal(got[True][name].view(np.int32),
                                      got[False][name].view(np.int32), err_msg=name)
    counts = got[False]["seg_i"][:, :, 0].sum(axis=1)
    assert (counts > 0).sum() >= B // 2  # most intervals hold entries


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_narrow_keyed_count_is_the_histogram_s(dtype):
    """The keyed count with NARROW (the launch table's ``keynarrow``): a band of at most NARROW
    values, in a row without +inf, is counted in 4-bit fields per lane instead of by
    ``tl.histogram``; its counts per value, count and fixed-point mass above the band and entry
    counts are the histogram's, bit for bit. Bands of more values and the +inf row keep the
    histogram (the same outputs too). Rows with ties, +-0, -inf and NaN."""
    rng = np.random.default_rng(43)
    B, V, seg_len, block = 16, 1000, 256, 32
    nseg = -(-V // seg_len)
    key_shift = SHIFTS[dtype]
    x_dev, intervals, row_max, inf_mode = _lean_inputs(_lean_rows(dtype, rng, B, V), dtype,
                                                       rng, key_shift)
    # and bands of four adjacent values around one of the row's own (rounded) entries
    x_held = x_dev.float().cpu().numpy()

    def value_key(index: int) -> int:
        return (index << key_shift) | ((1 << key_shift) - 1 if index < 0 else 0)

    for b in range(6, B - 1, 3):
        held = x_held[b][np.isfinite(x_held[b])]
        index = int(order_key_host(held[rng.integers(held.size)]).astype(np.int64)) >> key_shift
        intervals[b] = (value_key(index - 2) - 1, value_key(index + 1))
    got = {narrow: _run_compaction(x_dev, intervals, row_max, inf_mode, V, seg_len, nseg,
                                   band=True, lean=True, key_shift=key_shift, flat=False,
                                   block=block, unswitch=True, fixed=True, narrow=narrow)
           for narrow in (0, 8)}
    for name in got[0]:
        np.testing.assert_array_equal(got[8][name].view(np.int32), got[0][name].view(np.int32),
                                      err_msg=name)
    # rows the narrow count took: keyed bands (above NaN's key) of at most 8 values, no +inf,
    # with entries counted
    first = (intervals[:, 0] + 1) >> key_shift
    spans = (intervals[:, 1] >> key_shift) - first
    narrow_rows = ((spans < 8) & (intervals[:, 1] > intervals[:, 0]) & ~inf_mode
                   & (intervals[:, 0] >= KEY_FLOOR - 1))
    counted = got[8]["part_i"][:, :, :64].sum(axis=(1, 2))
    assert (narrow_rows & (counted > 0)).sum() >= 5, (spans, counted)
    # the fields' limit: segments of 15 tiles whose lanes meet one value in every tile (all-equal
    # rows, the value the band's 8th and its 1st), and a row of two values whose band spans
    # more than 8 values
    rows = np.full((3, V), 1.5, dtype=np.float32)
    rows[1, 1::2] = -0.75
    rows[2] = -1.0
    x_dev = torch.tensor(rows, device=DEVICE).to(getattr(torch, dtype))
    def index_of(v: float) -> int:
        return int(order_key_host(np.float32(v))) >> key_shift

    bands = np.array([(value_key(index_of(1.5) - 7) - 1, value_key(index_of(1.5))),
                      # (spans more than 8 values: the histogram's)
                      (value_key(index_of(-0.75)) - 1, value_key(index_of(1.5))),
                      (value_key(index_of(-1.0)) - 1, value_key(index_of(-1.0) + 7))],
                     dtype=np.int64)
    seg_len = 15 * block
    got = {narrow: _run_compaction(x_dev, bands, rows.max(axis=1), np.zeros(3, bool), V,
                                   seg_len, -(-V // seg_len), band=True, lean=True,
                                   key_shift=key_shift, flat=False, block=block, unswitch=True,
                                   fixed=True, narrow=narrow)
           for narrow in (0, 8)}
    for name in got[0]:
        np.testing.assert_array_equal(got[8][name].view(np.int32), got[0][name].view(np.int32),
                                      err_msg=name)
    counts = got[8]["part_i"][:, :, :64].sum(axis=1)
    assert counts[0, 7] == V and counts[2, 0] == V, counts


@pytest.mark.parametrize("dtype,band,flat", [("float32", True, True), ("bfloat16", True, False)])
def test_exp2_band_weights_differ_only_below_the_smallest_normal(dtype, band, flat):
    """``wide_compact_kernel`` with EXP2 (the launch table's ``wideexp2``: the band's weights as
    exp2((x - max) log2 e), without exp's fix-up for results below 2^-126) appends the same
    entries with the same counts as without it, and its masses are those of the weights with
    every weight below 2^-126 set to 0: on the GPU, where exp is computed as that exp2, equal
    bit for bit on rows whose entries all lie within 87 of the row's max (every weight normal),
    and within 2^-126 per entry elsewhere (the interpreter's NumPy exp and exp2 round
    differently: within 1e-5 there, the rounding of (x - max) log2 e)."""
    rng = np.random.default_rng(31)
    B, V, seg_len, block = 16, 1000, 256, 32
    nseg = -(-V // seg_len)
    x = _lean_rows(dtype, rng, B, V)
    x[: B // 2] = np.clip(x[: B // 2], -40.0, 40.0)  # (keeps NaN): every weight normal
    x_dev, intervals, row_max, inf_mode = _lean_inputs(x, dtype, rng, SHIFTS.get(dtype, 0))
    key_shift = SHIFTS.get(dtype, 0)
    got = {exp2: _run_compaction(x_dev, intervals, row_max, inf_mode, V, seg_len, nseg,
                                 band=band, lean=True, key_shift=key_shift, flat=flat,
                                 block=block, unswitch=True, exp2=exp2)
           for exp2 in (False, True)}
    for name in ("cand_val", "cand_idx", "seg_i", "part_i"):
        np.testing.assert_array_equal(got[True][name], got[False][name], err_msg=name)
    masses = {exp2: got[exp2]["part_f"][:, :, :2] for exp2 in (False, True)}
    if ON_GPU:
        np.testing.assert_array_equal(masses[True][: B // 2].view(np.int32),
                                      masses[False][: B // 2].view(np.int32))
    np.testing.assert_allclose(masses[True], masses[False], rtol=0 if ON_GPU else 1e-5,
                               atol=V * 2.0**-126)
    assert (masses[False][: B // 2] > 0).any()


def _fixed_masses_host(x: np.ndarray, row_max: np.ndarray, inf_mode: np.ndarray,
                       intervals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(B,) int64 fixed-point masses above each row's band and inside it, on the host: the sum
    of trunc(w * 2^40) of each entry's float32 weight w (exp(x - max), 0 for -inf and NaN; +inf
    rows weigh their +inf entries 1)."""
    keys = order_key_host(x).astype(np.int64)
    with np.errstate(over="ignore", invalid="ignore"):
        w = np.exp((x - row_max[:, None]).astype(np.float32))
    w = np.where(np.isfinite(x), w, np.float32(0.0))
    w = np.where(inf_mode[:, None], (x == np.inf).astype(np.float32), w)
    fixed = (w.astype(np.float64) * 2.0**40).astype(np.int64)  # exact: w * 2^40 < 2^53
    above = keys > intervals[:, 1:2]
    inside = (keys > intervals[:, 0:1]) & ~above
    return (np.where(above, fixed, 0).sum(axis=1), np.where(inside, fixed, 0).sum(axis=1))


@pytest.mark.parametrize("dtype,lean,flat", [("float32", True, True), ("float32", False, False),
                                             ("bfloat16", True, False)])
def test_fixed_band_masses_are_exact_sums(dtype, lean, flat):
    """``wide_compact_kernel`` with FIXED (the launch table's ``widefixed``) sums the band's
    masses as int64 fixed-point weights trunc(w * 2^40): per row, the mass above the band and
    the band's mass are the host's exact sums of those integers (bit for bit under the
    interpreter, whose exp is NumPy's; on a GPU within the exp's rounding), and they add up
    across bands exactly, whatever the lanes and segments: the mass above (lo, hi] plus its
    mass is the mass above (lo', lo] for any lo' < lo (float32 sums, grouped by another band,
    round differently). Rows with ties, +-0, -inf, NaN, +inf, subnormals and +-max; keyed
    16-bit bands (counted per value: count x fixed weight) among them."""
    rng = np.random.default_rng(41)
    B, V, seg_len, block = 16, 1000, 256, 32
    nseg = -(-V // seg_len)
    key_shift = SHIFTS.get(dtype, 0)
    edge = _lean_rows(dtype, rng, B, V)
    _, intervals, _, _ = _lean_inputs(edge, dtype, rng, key_shift)
    # the band below each row's band: (lo', lo], lo' a few of the row's keys lower
    below = intervals.copy()
    below[:, 1] = intervals[:, 0]
    for b in range(B):
        keys = np.unique(order_key_host(edge[b]).astype(np.int64))
        keys = keys[(keys > KEY_NAN) & (keys <= intervals[b, 0])]
        below[b, 0] = keys[max(keys.size - 7, 0)] - 1 if keys.size else KEY_NAN - 1
    # and rows of comparable weights, bands between quartiles: float32 sums of these, grouped
    # by the band, differ in about a third of the rows (interpreter)
    flat_rows = rng.normal(0.0, 1.0, size=(B, V)).astype(np.float32)
    if dtype == "bfloat16":
        flat_rows = torch.from_numpy(flat_rows).to(torch.bfloat16).float().numpy()
    keys = np.sort(order_key_host(flat_rows).astype(np.int64), axis=1)
    x = np.concatenate([edge, flat_rows])
    intervals = np.concatenate([intervals, keys[:, [V // 2, 3 * V // 4]]])
    below = np.concatenate([below, keys[:, [V // 4, V // 2]]])
    B = 2 * B
    x_dev = torch.tensor(x, device=DEVICE).to(getattr(torch, dtype))
    row_max = np.where(np.isfinite(x), x, -np.inf).max(axis=1)
    inf_mode = (x == np.inf).any(axis=1)
    run = {name: _run_compaction(x_dev, iv, row_max, inf_mode, V, seg_len, nseg, band=True,
                                 lean=lean, key_shift=key_shift, flat=flat, block=block,
                                 unswitch=lean, fixed=True)
           for name, iv in (("band", intervals), ("below", below))}
    for name, iv in (("band", intervals), ("below", below)):
        above, inside = _fixed_masses_host(x, row_max, inf_mode, iv)
        got_above = run[name]["part_f"][:, :, 0].sum(axis=1)
        # a keyed band (16-bit, few values) is counted per value: its mass is not stored
        keyed = run[name]["part_i"][:, :, :BINS].sum(axis=(1, 2)) > 0
        got_inside = np.where(keyed, inside, run[name]["part_f"][:, :, 1].sum(axis=1))
        tol = 0 if not ON_GPU else V * 2**20  # (a GPU's exp: within 2 ulp of NumPy's)
        np.testing.assert_allclose(got_above, above, rtol=0, atol=tol, err_msg=name)
        np.testing.assert_allclose(got_inside, inside, rtol=0, atol=tol, err_msg=name)
    plain = ~(run["band"]["part_i"][:, :, :BINS].sum(axis=(1, 2)) > 0)
    np.testing.assert_array_equal(
        (run["band"]["part_f"][:, :, 0] + run["band"]["part_f"][:, :, 1]).sum(axis=1)[plain],
        run["below"]["part_f"][:, :, 0].sum(axis=1)[plain])
    assert plain[B // 2:].all() and (run["band"]["part_f"][B // 2:, :, 1] > 0).all()


@pytest.mark.parametrize("batch", [1, 3, 5, 64, 65])
def test_fixed_table_plans_and_workspace(monkeypatch, batch):
    """The GPU launch table with ``widefixed=1x0,wideexp2=1x0,histsmall=64x0,widesmall=512x4,
    roundsmall=8x0,smallrows=3x0,roundatomic=0x0`` (built on the host, no launch): every wide
    launch takes FIXED and none the exp2 weights (every weight of the stage alike), pass A's
    search WIDE_FIXED; the workspace holds int64 masses 8-byte aligned at any batch (twice the
    float parts); batches
    of at most 64 rows take the one-launch histogram band, and those of at most 3 the small
    batches' compaction tile and warps and round split (the workspace sized for it), the others
    the usual settings, larger ones the sampled band; above V = 2^23 the table keeps float32
    masses."""
    from qrita.backends.triton import launch

    # (the rounds' partials per part, ``roundatomic=0x0``: the parts' scratch is what this
    # test sizes; with the per-row totals it does not follow the split)
    table = ("widefixed=1x0,wideexp2=1x0,histsmall=64x0,widesmall=512x4,roundsmall=8x0,"
             "smallrows=3x0,roundatomic=0x0")
    V = 131072
    off = "widefixed=0x0,histsmall=0x0,roundatomic=0x0"
    monkeypatch.setenv("QRITA_LAUNCH_TABLE", off)
    plain = launch._pipeline_config(V, torch.float32, False, off)
    monkeypatch.setenv("QRITA_LAUNCH_TABLE", table)  # (read by the table; the argument keys its cache)
    cfg = launch._pipeline_config(V, torch.float32, False, table)
    assert cfg.wide_fixed and cfg.hist_small_batch == 64
    assert not plain.wide_fixed and plain.hist_small_batch == 0
    plan = launch._plan(cfg, False, False, True, True, False, False, True, False)
    for name in ("compact_True", "compact_False", "search_True", "search_False", "round",
                 "narrow"):
        assert plan[name]["FIXED"] is True, name
    assert plan["compact_True"]["EXP2"] is False
    assert plan["threshold_False_0"]["WIDE_FIXED"] is True
    ws = launch._workspace(batch, cfg, torch.device("cpu"), None, True)
    ws_plain = launch._workspace(batch, plain, torch.device("cpu"), None, True)
    for name in ("row_f", "part_f"):
        assert ws[name].data_ptr() % 8 == 0, name
    assert ws["part_f"].numel() == 2 * ws_plain["part_f"].numel()
    run = launch.call_config(cfg, V, None, 0.9, batch)
    usual = (plain.block_wide, plain.warps_wide, plain.round_split)
    if 3 < batch <= 64:
        assert run.hist_bins == launch.HIST_SMALL_BINS and run.hist_one_launch
        assert (run.block_wide, run.warps_wide, run.round_split) == usual
        assert run.hist_small_batch == 0 and run.block_wide_small == 0
    elif batch <= 3:
        assert run.hist_bins == launch.HIST_SMALL_BINS and run.hist_one_launch
        assert (run.block_wide, run.warps_wide, run.round_split) == (512, 4, 8)
        small_plan = launch._plan(run, False, False, True, True, False, False, True, False)
        assert small_plan["compact_True"]["BLOCK"] == 512
        assert small_plan["compact_True"]["num_warps"] == 4
        assert small_plan["round"]["NSEG_P2"] == launch.next_pow2(cfg.nseg * 8)
        ws_small = launch._workspace(batch, run, torch.device("cpu"), None, True)
        assert ws_small["part_f"].numel() == 4 * ws["part_f"].numel()
    else:
        assert run is cfg and not run.hist_bins
        assert (cfg.block_wide, cfg.warps_wide, cfg.round_split) == usual
    assert launch.call_config(plain, V, None, 0.9, batch) is plain
    huge = launch._pipeline_config(2**23 + 1, torch.float32, False, table)
    assert not huge.wide_fixed and huge.hist_small_batch == 0


@pytest.mark.parametrize("split", [2, 4])
def test_hist_counts_split_over_programs_are_the_same(split):
    """The count histogram of the band (``hist_band.hist_band_count_kernel``) with each
    segment split over ``split`` programs (the launch table's ``histsplit``) adds exactly the
    same integer counts per bin as one program per segment: zipf and Gaussian rows with ties,
    -inf and NaN entries, an odd V."""
    from qrita.backends.triton import hist_band
    from qrita.testing import generators

    rng = np.random.default_rng(61)
    V, nseg, nb = 1001, 4, 64
    seg_len = 256  # nseg segments cover V
    x = np.concatenate([generators.zipf_logits(2, V, 1.1, rng),
                        generators.gaussian_logits(2, V, 2.0, rng)]).astype(np.float32)
    x[:, :50] = np.round(x[:, :50])
    x[1, 7:20] = -np.inf
    x[3, 3] = np.nan
    rows = x.shape[0]
    row_i = torch.zeros((rows, 16), dtype=torch.int32, device=DEVICE)
    row_i[:, 0] = 3  # wide rows
    row_f = torch.zeros((rows, 8), dtype=torch.float32, device=DEVICE)
    row_f[:, 0] = torch.tensor(np.nanmax(x, axis=1))
    row_f[:, 1] = 0.9  # target mass
    row_f[:, 4] = 1.0  # row mass
    xt = torch.tensor(x, device=DEVICE)
    counts = []
    for programs in (1, split):
        bins = torch.zeros((rows, nb), dtype=torch.int32, device=DEVICE)
        hist_band.hist_band_count_kernel[(rows, nseg * programs)](
            xt, row_i, row_f, V, xt.stride(0), seg_len // programs, 0, bins, bins,
            NB=nb, BLOCK=min(128, seg_len // programs), MERGE=False, STEPS=7)
        counts.append(bins.cpu().numpy())
    np.testing.assert_array_equal(counts[0], counts[1])
    finite = np.isfinite(x).sum(axis=1)
    np.testing.assert_array_equal(counts[0].sum(axis=1), finite)  # every finite entry once
