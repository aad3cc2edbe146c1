"""Shared ``@triton.jit`` steps of the Qrita kernels (docs/algorithm.md). Imports triton only."""

import os

import triton
import triton.language as tl

KEY_NAN = tl.constexpr(-2147483648)  # below the key of -inf (-2139095041)
KEY_MAX = tl.constexpr(2147483647)
KEY_FLOOR = tl.constexpr(-2139095041)  # the lowest non-NaN rank key: -inf largest-first, +inf smallest-first
KEY_INF = tl.constexpr(2139095040)  # the key of +inf (largest-first); the keys above it are no float's
#: measuring knob, read once at import: QRITA_RADIX=1 finds top-k's boundary key and the sample's
#: order statistics by radix selection (:func:`count_search_radix`) instead of pivot rounds
#: (:func:`search_in_registers`); off by default: ~30 us slower at B=1024 on the H200
#: (BENCHMARKS.md eighth section)
RADIX = tl.constexpr(os.environ.get("QRITA_RADIX", "0") == "1")
#: measuring knob, read once at import: QRITA_SEARCH_INT32=0 compares keys with the pivot rounds'
#: bounds in int64 (the form before the tenth session) instead of int32
SEARCH_INT32 = tl.constexpr(os.environ.get("QRITA_SEARCH_INT32", "1") != "0")
#: measuring knob, read once at import: QRITA_SEARCH_FUSED=1 gives each count round of the pivot
#: search (:func:`search_in_registers`, top-k) one reduction for the pivots' counts and the four
#: sub-intervals' smallest and largest keys, so the interval snaps without the two reductions
#: of :func:`snap_interval` (the same integers; fewer block-wide reductions in a chain)
SEARCH_FUSED = tl.constexpr(os.environ.get("QRITA_SEARCH_FUSED", "0") == "1")
#: the sample searches of the σ-cutoff (:func:`sample_cutoff_key`, :func:`retry_cutoff_key`), of
#: the wide band's placement (:func:`band_interval`) and the wide stage's per-row search
#: (``wide._finish_compacted``) take one reduction per pivot (``search_in_registers`` SPLIT):
#: sm90 SASS, the band kernel (4 warps) 255 registers + 880 B of stack -> 142, the cutoff
#: kernel (4 warps) 237 -> 100, the band's search kernel (8 warps) 253 -> 80; H200, fp32 zipf
#: topp0.9 graph 1400 -> 1229 us at B = 1024, 171 -> 153 at B = 1 (BENCHMARKS.md, thirtieth
#: session). Measuring knob, read once at import: QRITA_SEARCH_SPLIT=0 gives them the (N, 4)
#: reduction per round (the form before)
SEARCH_SPLIT = tl.constexpr(os.environ.get("QRITA_SEARCH_SPLIT", "1") != "0")
#: the per-row search of the candidates (``pipeline.row_boundary``: the top-k and top-p
#: threshold kernels) takes one reduction per pivot too: H200, fp32, V = 131072, graph us, the
#: same inputs: topk100_topp0.9 B = 1024 427.7 -> 408.5 (zipf; threshold kernel 97.6 -> 77.2),
#: 428.0 -> 407.4 (gaussian); B = 64 91.7 -> 90.0; topk1000 within 2.5 us, never slower
#: (BENCHMARKS.md thirty-first session). Measuring knob, read once at import:
#: QRITA_SEARCH_SPLIT_ROWS=0 gives them the (N, 4) reduction per round (the form before)
SEARCH_SPLIT_ROWS = tl.constexpr(os.environ.get("QRITA_SEARCH_SPLIT_ROWS", "1") != "0")
SAMPLE_CHUNKS = tl.constexpr(16)  # the σ-cutoff's sample: this many chunks spread over the row
#: fixed-point masses (the wide stage's ``FIXED``, the launch table's ``widefixed``): a float32
#: weight w in [0, 1] counts as the int64 trunc(w * 2^FIXED_BITS), every mass is an int64 sum of
#: those, exact in any order (docs/algorithm.md §7, "Fixed-point masses"). Entries lose less than
#: 2^-40 each: V * 2^-40 against a row mass of at least 1 (the max's weight), 1.2e-7 at V = 2^17;
#: sums stay below 2^63 for V <= 2^23 (FIXED_MAX_VOCAB; the launch table keeps float masses above)
FIXED_BITS = tl.constexpr(40)
FIXED_SCALE = tl.constexpr(1099511627776.0)  # 2^FIXED_BITS, a power of two: w * it is exact
FIXED_MAX_VOCAB = 1 << 23
#: the σ-cutoff's order statistic up to this rank by repeated max-reductions
#: (:func:`kth_distinct_key`); measuring knob, read once at import: QRITA_CUTOFF_SMALL=0 takes
#: the pivot rounds at every rank (the form before the twelfth session)
SMALL_RANK = tl.constexpr(16)
CUTOFF_SMALL = tl.constexpr(os.environ.get("QRITA_CUTOFF_SMALL", "1") != "0")


@triton.jit
def order_key(x):
    """Order key (int32) of float32 values: larger value -> larger key; -0.0 == +0.0; NaN lowest."""
    x = tl.where(x == 0.0, 0.0, x)
    bits = x.to(tl.int32, bitcast=True)
    key = tl.where(bits >= 0, bits, bits ^ 0x7FFFFFFF)
    return tl.where(x != x, KEY_NAN, key)


@triton.jit
def upper_normal_quantile(q):
    """z with P(N(0,1) > z) = q, for 0 < q < 1 (rational approximation, |error| < 5e-4).

    Only used to place the σ-cutoff; its accuracy changes speed, never the answer.
    """
    tail = tl.minimum(q, 1.0 - q)
    t = tl.sqrt(-2.0 * tl.log(tl.maximum(tail, 1e-30)))
    num = 2.515517 + t * (0.802853 + t * 0.010328)
    den = 1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308))
    z = t - num / den
    return tl.where(q <= 0.5, z, -z)


@triton.jit
def first_tile_stats(row_ptr, V, BLOCK: tl.constexpr):
    """Mean, std and finite fraction of the first tile (the σ-truncation sample)."""
    offs = tl.arange(0, BLOCK)
    valid = offs < V
    x = tl.load(row_ptr + offs, mask=valid, other=0.0).to(tl.float32)
    finite = valid & (tl.abs(x) < float("inf"))  # NaN compares false
    n_finite = tl.sum(finite.to(tl.int32), axis=0)
    n_valid = tl.sum(valid.to(tl.int32), axis=0)
    denom = tl.maximum(n_finite, 1).to(tl.float32)
    mean = tl.sum(tl.where(finite, x, 0.0), axis=0) / denom
    dev = tl.where(finite, x - mean, 0.0)
    var = tl.sum(dev * dev, axis=0) / tl.maximum(n_finite - 1, 1).to(tl.float32)
    frac_finite = n_finite.to(tl.float32) / n_valid.to(tl.float32)
    return mean, tl.sqrt(var), frac_finite, n_finite


@triton.jit
def weights_of(x, row_max, inf_mode):
    """Unnormalised probabilities: exp(x - row_max); 0 for -inf/NaN; +inf rows weigh +inf entries 1."""
    finite = tl.abs(x) < float("inf")
    w = tl.where(finite, tl.exp(tl.where(finite, x, 0.0) - row_max), 0.0)
    w_inf = tl.where(x == float("inf"), 1.0, 0.0)
    return tl.where(inf_mode, w_inf, w)


@triton.jit
def fixed_weight(w):
    """The int64 fixed-point weight trunc(w * 2^FIXED_BITS) of float32 weights w >= 0 (exact:
    the scaling is by a power of two, the truncation of a float below 2^63 to an integer)."""
    return (w * FIXED_SCALE).to(tl.int64)


@triton.jit
def fixed_target(target):
    """The int64 ceil(target * 2^FIXED_BITS) of a float32 target mass >= 0: a fixed-point mass m
    (an integer) reaches the target exactly when m >= it."""
    return tl.math.ceil(target * FIXED_SCALE).to(tl.int64)


@triton.jit
def quarter_pivots(lo, hi):
    """Lane j of 4 holds lo + (hi - lo) * j // 4 (int64); lane 0 is lo itself."""
    lanes = tl.arange(0, 4).to(tl.int64)
    return lo + ((hi - lo) * lanes) // 4


@triton.jit
def narrow(piv, holds, lo, hi):
    """New (lo, hi] from per-pivot predicates: T > pivot iff ``holds``."""
    new_lo = tl.maximum(lo, tl.max(tl.where(holds, piv, lo), axis=0))
    new_hi = tl.minimum(hi, tl.min(tl.where(holds, hi, piv), axis=0))
    return new_lo, new_hi


@triton.jit
def _count_min_max(count_a, min_a, max_a, count_b, min_b, max_b):
    return count_a + count_b, tl.minimum(min_a, min_b), tl.maximum(max_a, max_b)


@triton.jit
def count_round_snapped(keys, member, lo, hi, base_count, k_target):
    """One top-k round of :func:`search_in_registers` with its snap in the same reduction.

    The four pivots p_j = lo + (hi - lo) * j // 4 cut (lo, hi] into the sub-intervals
    (p_j, p_{j+1}] (p_4 = hi). One (N, 4) reduction gives the count above each pivot and each
    sub-interval's smallest and largest member key; the predicate holds on a prefix of the
    pivots (the counts do not grow with the pivot, lane 0 is lo itself), so T lies in the last
    holding pivot's sub-interval, already snapped: (smallest key - 1, largest key], or
    (KEY_MAX - 1, KEY_NAN] when it holds no key (as :func:`snap_interval`). lo, hi int64 with
    KEY_NAN - 1 <= lo, hi - lo > 1, hi <= KEY_MAX; keys int32."""
    lanes = tl.arange(0, 4).to(tl.int64)
    piv = lo + ((hi - lo) * lanes) // 4
    piv_next = lo + ((hi - lo) * (lanes + 1)) // 4
    # key > p_j as key >= p_j + 1 in int32 (p_j < hi <= KEY_MAX; lane 0 may be KEY_NAN - 1,
    # where every key is above); key <= p_{j+1} where the sub-interval is not empty
    first = tl.maximum(piv + 1, KEY_NAN).to(tl.int32)
    last = tl.maximum(piv_next, KEY_NAN).to(tl.int32)
    above = member[:, None] & (keys[:, None] >= first[None, :])
    inside = above & (keys[:, None] <= last[None, :]) & (piv_next > piv)[None, :]
    count, key_min, key_max = tl.reduce(
        (above.to(tl.int32), tl.where(inside, keys[:, None], KEY_MAX),
         tl.where(inside, keys[:, None], KEY_NAN)), 0, _count_min_max)
    holds = (base_count + count >= k_target) | (piv == lo)
    last_holding = tl.max(tl.where(holds, lanes, 0), axis=0)
    at = lanes == last_holding
    new_lo = tl.max(tl.where(at, key_min, KEY_NAN), axis=0).to(tl.int64) - 1
    new_hi = tl.max(tl.where(at, key_max, KEY_NAN), axis=0).to(tl.int64)
    return new_lo, new_hi


@triton.jit
def _split_round(keys, w, member, lo, hi, base_count, base_mass, k_target, mass_target,
                 USE_MASS: tl.constexpr):
    """One round of :func:`search_in_registers` with SPLIT: the pivots lo + (hi - lo) j / 4,
    j = 1, 2, 3, each tested by a reduction of its own; (lo, hi] narrowed to the quarter that
    holds T (the predicate holds on a prefix of the pivots), not snapped."""
    new_lo = lo
    new_hi = hi
    for j in tl.static_range(1, 4):
        piv = lo + ((hi - lo) * j) // 4
        above = member & (keys > tl.maximum(piv, KEY_NAN).to(tl.int32))
        if USE_MASS:  # (the literal 0 keeps w's type: float32, or int64 fixed-point masses)
            holds = base_mass + tl.sum(tl.where(above, w, 0), axis=0) >= mass_target
        else:
            holds = base_count + tl.sum(above.to(tl.int32), axis=0) >= k_target
        holds = holds | (piv == lo)  # (as :func:`narrow`: a pivot at lo narrows nothing)
        new_lo = tl.where(holds, tl.maximum(new_lo, piv), new_lo)
        new_hi = tl.where(holds, new_hi, tl.minimum(new_hi, piv))
    return new_lo, new_hi


@triton.jit
def search_in_registers(keys, w, member, lo, hi, base_count, base_mass, k_target, mass_target,
                        USE_MASS: tl.constexpr, FUSED: tl.constexpr = SEARCH_FUSED,
                        SPLIT: tl.constexpr = False):
    """Quaternary pivot search over candidates held in registers.

    Finds the boundary key T in (lo, hi]: the largest q with predicate(q - 1) true, where
    predicate(q) = base_count + #(key > q) >= k_target   (top-k), or
                   base_mass + Σ w(key > q) >= mass_target (top-p; w, base_mass and mass_target
                   float32, or int64 fixed-point masses: :func:`fixed_weight`).
    Each round tests three pivots at 1/4, 1/2, 3/4 of the interval, then snaps the interval to the
    smallest and largest candidate key inside it; one distinct key left means T is found.
    FUSED (top-k only): each round's counts and snap in one reduction
    (:func:`count_round_snapped`); the same rounds and answer.
    SPLIT: the three pivots' sums as three reductions of (N,) instead of one of (N, 4) (the same
    pivots and rounds; a mass may round differently): fewer registers for large N.
    Returns T and the number of rounds.
    """
    rounds = 0
    # snap to the occupied keys: lo -> (min key > lo) - 1, hi -> max key <= hi
    lo, hi = snap_interval(keys, member, lo, hi)
    if FUSED and not USE_MASS:
        while hi - lo > 1:
            lo, hi = count_round_snapped(keys, member, lo, hi, base_count, k_target)
            rounds += 1
    elif SPLIT:
        while hi - lo > 1:
            lo, hi = _split_round(keys, w, member, lo, hi, base_count, base_mass, k_target,
                                  mass_target, USE_MASS)
            lo, hi = snap_interval(keys, member, lo, hi)
            rounds += 1
    else:
        while hi - lo > 1:
            piv = quarter_pivots(lo, hi)
            if SEARCH_INT32:
                # per candidate, int32 compares only: pivots other than lane 0 (lo itself, no
                # test: it holds) lie in (lo, hi], inside the int32 keys' range
                piv32 = tl.maximum(piv, KEY_NAN).to(tl.int32)
                above = member[:, None] & (keys[:, None] > piv32[None, :])
            else:
                above = member[:, None] & (keys[:, None].to(tl.int64) > piv[None, :])
            if USE_MASS:
                mass = base_mass + tl.sum(tl.where(above, w[:, None], 0), axis=0)
                holds = mass >= mass_target
            else:
                count = base_count + tl.sum(above.to(tl.int32), axis=0)
                holds = count >= k_target
            holds = holds | (piv == lo)
            lo, hi = narrow(piv, holds, lo, hi)
            lo, hi = snap_interval(keys, member, lo, hi)
            rounds += 1
    return hi.to(tl.int32), rounds


@triton.jit
def int32_bounds(lo, hi):
    """int32 (first, last) with first <= key <= last iff lo < key <= hi, for int64 lo >= KEY_NAN - 1
    and any int64 hi: key > lo is key >= lo + 1, both ends clamped into int32 (an end outside it
    leaves the interval empty, or every key on that side inside)."""
    first = tl.minimum(tl.maximum(lo + 1, KEY_NAN), KEY_MAX).to(tl.int32)
    last = tl.minimum(tl.maximum(hi, KEY_NAN), KEY_MAX).to(tl.int32)
    first = tl.where((lo < KEY_MAX) & (hi >= KEY_NAN), first, KEY_MAX)  # else: empty
    return first, last


@triton.jit
def snap_interval(keys, member, lo, hi):
    """(lo, hi] snapped onto the member keys: lo -> (min key > lo) - 1, hi -> max key <= hi
    (an interval holding no key becomes (KEY_MAX - 1, KEY_NAN]); lo, hi int64."""
    if SEARCH_INT32:
        first, last = int32_bounds(lo, hi)
        inside = member & (keys >= first) & (keys <= last)
    else:
        inside = member & (keys > lo) & (keys <= hi)
    lo = tl.min(tl.where(inside, keys, KEY_MAX), axis=0).to(tl.int64) - 1
    hi = tl.max(tl.where(inside, keys, KEY_NAN), axis=0).to(tl.int64)
    return lo, hi


@triton.jit
def count_search_radix(keys, member, lo, hi, base_count, k_target):
    """:func:`search_in_registers`'s top-k answer (USE_MASS off) by radix selection: four
    256-bin histograms of the keys' bytes, highest byte first, instead of pivot rounds (each
    round of those is several block-wide reductions; a histogram pass is about one).

    keys : int32 order keys; member : bool, same shape; lo < hi int64, base_count / k_target
    int32 scalars. T is the largest q in (lo, hi] with base_count + #(member key > q - 1) >=
    k_target, taken over the member keys inside (lo, hi]: with need = k_target - base_count -
    #(member key > hi) and n inside, the need-th largest inside key when 1 <= need <= n, the
    largest when need <= 0, the smallest when need > n, and KEY_NAN when none is inside (what the
    pivot rounds return in every case). Returns T (int32) and the number of histogram passes.
    """
    inside = member & (keys.to(tl.int64) > lo) & (keys.to(tl.int64) <= hi)
    n_in = tl.sum(inside.to(tl.int32), axis=0)
    need = k_target - base_count - tl.sum((member & (keys.to(tl.int64) > hi)).to(tl.int32), axis=0)
    key_top = tl.max(tl.where(inside, keys, KEY_NAN), axis=0)
    key_low = tl.min(tl.where(inside, keys, KEY_MAX), axis=0)
    ukey = keys.to(tl.int64) + 2147483648  # in [0, 2^32): unsigned order of the keys
    bins = tl.arange(0, 256)
    prefix = (n_in * 0).to(tl.int64)  # the bytes of the answer found so far (as a number)
    left = tl.maximum(tl.minimum(need, n_in), 1)  # rank still to find among ``active``
    active = inside
    for byte in tl.static_range(4):
        digit = ((ukey >> (24 - 8 * byte)) & 255).to(tl.int32)
        counts = tl.histogram(digit, 256, mask=active)
        n_active = tl.sum(counts, axis=0)
        at_or_above = n_active - tl.cumsum(counts, axis=0) + counts
        d = tl.max(tl.where(at_or_above >= left, bins, 0), axis=0)
        left -= tl.sum(tl.where(bins > d, counts, 0), axis=0)
        prefix = prefix * 256 + d
        active = active & (digit == d)
    found = (prefix - 2147483648).to(tl.int32)
    T = tl.where(need <= 0, key_top, tl.where(need > n_in, key_low, found))
    return tl.where(n_in > 0, T, KEY_NAN), n_in * 0 + 4


@triton.jit
def key_to_value(key):
    """Inverse of :func:`order_key` for non-NaN keys (float32)."""
    bits = tl.where(key >= 0, key, key ^ 0x7FFFFFFF)
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def lower_bound_value(first):
    """float32 ``v`` with ``x >= v`` iff ``order_key(x) >= first``, for every non-NaN float32 x
    (int32 ``first``; NaN's own key is left to the caller). Key -1 is no float's (-0.0 takes the
    key of +0.0): its value -0.0 compares as +0.0, which is right, since key >= -1 is key >= 0.
    The keys above +inf's are NaN bit patterns, which no compare takes: right too."""
    v = key_to_value(first)
    return tl.where(first <= KEY_FLOOR, -float("inf"), v)  # every non-NaN key


@triton.jit
def upper_bound_value(last):
    """float32 ``v`` with ``x <= v`` iff ``order_key(x) <= last``, for every non-NaN float32 x
    (int32 ``last``). Key -1 is no float's: key <= -1 is key <= -2, the negative subnormal
    nearest 0. The keys below -inf's are NaN bit patterns, which no compare takes: right too."""
    v = key_to_value(tl.where(last == -1, -2, last))
    return tl.where(last >= KEY_INF, float("inf"), v)  # every non-NaN key


@triton.jit
def full_row_round(row_ptr, V, piv, lo, hi, row_max, inf_mode, BLOCK: tl.constexpr,
                   NEED_MASS: tl.constexpr, SMALLEST: tl.constexpr, FIXED: tl.constexpr = False):
    """One read of the row: count (and mass) above each of 4 pivots, and the smallest and largest
    key inside (lo, hi] (to snap the interval onto occupied keys). FIXED: the masses as int64
    fixed-point sums (:func:`fixed_weight`)."""
    counts = tl.zeros([4], dtype=tl.int32)
    masses = tl.zeros([4], dtype=tl.int64 if FIXED else tl.float32)
    key_min = KEY_MAX
    key_max = KEY_NAN
    piv32 = tl.maximum(piv, KEY_NAN).to(tl.int32)  # lane 0 may be KEY_NAN - 1: its count is unused
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        valid = offs < V
        x = tl.load(row_ptr + offs, mask=valid, other=0.0).to(tl.float32)
        key = rank_key(x, SMALLEST)
        above = valid[:, None] & (key[:, None] > piv32[None, :])
        counts += tl.sum(above.to(tl.int32), axis=0)
        if NEED_MASS:
            w = weights_of(x, row_max, inf_mode)
            if FIXED:
                masses += tl.sum(tl.where(above, fixed_weight(w)[:, None], 0), axis=0)
            else:
                masses += tl.sum(tl.where(above, w[:, None], 0.0), axis=0)
        inside = valid & (key.to(tl.int64) > lo) & (key.to(tl.int64) <= hi)
        key_min = tl.minimum(key_min, tl.min(tl.where(inside, key, KEY_MAX), axis=0))
        key_max = tl.maximum(key_max, tl.max(tl.where(inside, key, KEY_NAN), axis=0))
    return counts, masses, key_min, key_max


@triton.jit
def rank_key(x, SMALLEST: tl.constexpr):
    """Order key in the direction of the ranking: larger key = earlier in the order; NaN last."""
    key = order_key(x)
    if SMALLEST:
        key = tl.where(key == KEY_NAN, KEY_NAN, ~key)
    return key


@triton.jit
def kth_largest_key(keys, member, k, zero_i, SPLIT: tl.constexpr = False):
    """The k-th largest key among ``member`` entries (1 <= k <= #members), by pivot rounds (radix
    selection with QRITA_RADIX=1)."""
    lo = zero_i.to(tl.int64) + KEY_NAN - 1
    hi = zero_i.to(tl.int64) + KEY_MAX
    if RADIX:
        key, rounds = count_search_radix(keys, member, lo, hi, zero_i, k)
    else:
        key, rounds = search_in_registers(keys, keys.to(tl.float32), member, lo, hi, zero_i,
                                          zero_i.to(tl.float32), k, zero_i.to(tl.float32), False,
                                          SPLIT=SPLIT)
    return key


@triton.jit
def kth_distinct_key(keys, member, rank, STEPS: tl.constexpr):
    """The rank-th largest *distinct* key among ``member`` entries (1 <= rank <= STEPS), by
    rank max-reductions: a key at or below the rank-th largest counted with copies (the same
    when the keys are distinct); fewer distinct keys than rank give the smallest one.

    For the σ-cutoff's small order statistics (top-k with small k): a few reductions instead of
    :func:`kth_largest_key`'s pivot rounds. A lower key only adds candidates: speed, not the
    answer."""
    found = tl.max(tl.where(member, keys, KEY_NAN), axis=0)
    for step in range(1, STEPS):
        if step < rank:
            below = tl.max(tl.where(member & (keys < found), keys, KEY_NAN), axis=0)
            found = tl.where(below > KEY_NAN, below, found)
    return found


@triton.jit
def sample_offsets(V, SAMPLE: tl.constexpr):
    """Offsets of a row's sample: SAMPLE_CHUNKS contiguous chunks spread evenly over the row (the
    whole row when V <= SAMPLE), so sorted or blocked rows are sampled fairly; and their mask."""
    CHUNK: tl.constexpr = SAMPLE // SAMPLE_CHUNKS
    lane = tl.arange(0, SAMPLE)
    chunk_stride = tl.maximum((V // SAMPLE_CHUNKS) // 16 * 16, CHUNK)
    offs = tl.where(V > SAMPLE, (lane // CHUNK) * chunk_stride + lane % CHUNK, lane)
    return offs, offs < V


@triton.jit
def band_interval(row_ptr, V, lo, hi, row_max, row_mass, target, inf_mode, max_band,
                  SAMPLE: tl.constexpr):
    """A band (b_lo, b_hi] inside (lo, hi] that holds a top-p row's boundary key T with high
    probability and about ``max_band`` entries at most, placed from a SAMPLE-entry sample.

    The row's max and mass are exact here (pass A), so the mass *below* a key, L(q), is what the
    sample estimates: the tail is many small weights, which a sample measures well, while the
    mass above T is dominated by a few large entries a sample usually misses. T̂ solves
    (V / n) · L_sample(T̂) = row_mass - target; the band spans m sample ranks either side of T̂,
    m = min(3·sqrt(r̂) + 3, max_band·n / (2V)) with r̂ the sample rank of T̂. Rows with +inf entries
    weigh only those: the band is the key of +inf. Only speed depends on the band: the wide
    search checks it with exact counts and masses and narrows from it when it misses.
    Measured slower on the H200 (fp32 top-p, V = 131072; BENCHMARKS.md, twenty-ninth session):
    the band from the sample's counts in 4096 bins of M - x (one ``tl.histogram`` per row:
    B = 1 63 vs 41 µs, B = 64 122 vs 48), and the two order statistics below in one loop of
    rounds sharing their reductions (B = 1024 339 vs 235 µs at 4 warps, 330 at 8). At 4 warps
    this kernel takes 255 registers per thread and spills (sm90 SASS).
    """
    offs, valid = sample_offsets(V, SAMPLE)
    x = tl.load(row_ptr + offs, mask=valid, other=0.0).to(tl.float32)
    finite = valid & (tl.abs(x) < float("inf"))
    keys = order_key(x)
    w = tl.where(finite, tl.exp(tl.where(finite, x, 0.0) - row_max), 0.0)
    n_valid = tl.sum(valid.to(tl.int32), axis=0)
    n_finite = tl.sum(finite.to(tl.int32), axis=0)
    zero_i = n_valid * 0
    scale = V / n_valid.to(tl.float32)
    need = tl.sum(w, axis=0) - (row_mass - target) / scale  # sample mass above T̂
    b_lo = lo
    b_hi = hi
    if n_finite > 0:
        t_hat, r = search_in_registers(keys, w, finite, zero_i.to(tl.int64) + KEY_NAN - 1,
                                       zero_i.to(tl.int64) + KEY_MAX, zero_i,
                                       zero_i.to(tl.float32), zero_i, need, True,
                                       SPLIT=SEARCH_SPLIT)
        r_hat = tl.sum((finite & (keys >= t_hat)).to(tl.int32), axis=0)
        r_hat = tl.where(need > 0.0, r_hat, n_finite)
        m_max = tl.maximum(max_band * n_valid.to(tl.float32) / (2.0 * V), 1.0)
        m = tl.minimum(tl.ceil(3.0 * tl.sqrt(r_hat.to(tl.float32)) + 3.0), m_max).to(tl.int32)
        if r_hat - m >= 1:
            b_hi = tl.minimum(hi, kth_largest_key(keys, finite, r_hat - m, zero_i,
                                                  SEARCH_SPLIT).to(tl.int64))
        if r_hat + m <= n_finite:
            b_lo = tl.maximum(lo, kth_largest_key(keys, finite, r_hat + m, zero_i,
                                                  SEARCH_SPLIT).to(tl.int64) - 1)
        # heavy ties (16-bit dtypes): a tie group larger than m sample ranks would make the band
        # T̂'s key alone; keep the sample's neighbouring keys on both sides inside it
        key_above = tl.min(tl.where(finite & (keys > t_hat), keys, KEY_MAX), axis=0)
        key_below = tl.max(tl.where(finite & (keys < t_hat), keys, KEY_NAN), axis=0)
        b_hi = tl.where(key_above < KEY_MAX, tl.maximum(b_hi, tl.minimum(hi, key_above)), b_hi)
        b_lo = tl.where(key_below > KEY_NAN,
                        tl.minimum(b_lo, tl.maximum(lo, key_below.to(tl.int64) - 1)), b_lo)
    key_inf = order_key(zero_i.to(tl.float32) + float("inf")).to(tl.int64)
    b_lo = tl.where(inf_mode, tl.maximum(lo, key_inf - 1), b_lo)
    b_hi = tl.where(inf_mode, tl.minimum(hi, key_inf), b_hi)
    empty = b_hi <= b_lo
    return tl.where(empty, lo, b_lo), tl.where(empty, hi, b_hi)


@triton.jit
def sample_moments(x, finite):
    """Count, mean and sample std (ddof 1) of the finite entries, from one reduction of their
    count, sum and sum of squares (float64: no cancellation at float32 logits' magnitudes)."""
    xf = tl.where(finite, x, 0.0).to(tl.float64)
    # columns (count, sum) and (sum of squares, 0), summed together
    sums = tl.sum(tl.join(tl.join(finite.to(tl.float64), xf), tl.join(xf * xf, xf * 0.0)),
                  axis=0)
    first, second = tl.split(sums)
    count, total = tl.split(first)
    squares, _ = tl.split(second)
    n = tl.maximum(count, 1.0)
    mean = total / n
    var = tl.maximum(squares - n * mean * mean, 0.0) / tl.maximum(count - 1.0, 1.0)
    return count.to(tl.int32), mean.to(tl.float32), tl.sqrt(var).to(tl.float32)


@triton.jit
def sample_cutoff_key(row_ptr, V, k, k_on, p, max_cands, SAMPLE: tl.constexpr,
                      OVERSAMPLE: tl.constexpr, SMALLEST: tl.constexpr):
    """σ-truncation cutoff (an order key) from the row's first SAMPLE entries.

    top-k: Gaussian model, cutoff = mean + z·std with P(N(0,1) > z) = want/V_finite, where
    want = min(OVERSAMPLE·k, (k + max_cands)/2); the sample itself checks the model: when the
    sample's count above that cutoff predicts fewer than k or more than ``max_cands`` entries in
    the row (the row is not Gaussian), the sample's own order statistic replaces it, at the rank
    r_k + 4·sqrt(r_k) + 4 where r_k = k·SAMPLE/V (about 4 standard deviations of safety).
    top-p alone: tilted Gaussian, cutoff = mean + std² - std·z with P(N(0,1) > z) = (1-p)/OVERSAMPLE,
    lowered to the sample's own top-p' threshold when that is lower.
    Only speed depends on the cutoff: the answer is exact whatever it is.
    """
    offs, valid = sample_offsets(V, SAMPLE)
    x = tl.load(row_ptr + offs, mask=valid, other=0.0).to(tl.float32)
    if SMALLEST:
        x = -x
    finite = valid & (tl.abs(x) < float("inf"))
    n_valid = tl.minimum(V, SAMPLE)  # the sample's offsets are distinct and below V
    n_finite, mean, std = sample_moments(x, finite)
    usable = (n_finite >= 2) & (std > 0.0) & (std < float("inf"))
    frac_finite = n_finite.to(tl.float32) / n_valid.to(tl.float32)
    keys = order_key(x)
    zero_i = n_valid * 0
    if k_on:
        kf = k.to(tl.float32)
        want = tl.minimum(OVERSAMPLE * kf, 0.5 * (kf + max_cands))
        frac = want / (V * tl.maximum(frac_finite, 1e-6))
        cut = mean + std * upper_normal_quantile(tl.minimum(tl.maximum(frac, 1e-30), 0.999))
        cut = tl.where(usable & (frac < 1.0), cut, -float("inf"))
        cut_key = order_key(cut)
        predicted = tl.sum((valid & (keys >= cut_key)).to(tl.float32), axis=0) * V / n_valid
        if (predicted < kf) | (predicted > tl.minimum(max_cands, 4.0 * want)):
            r_k = kf * n_valid / V
            rank = tl.ceil(r_k + 3.0 * tl.sqrt(r_k) + 3.0)
            rank = tl.minimum(tl.maximum(rank, 1.0), n_valid.to(tl.float32)).to(tl.int32)
            if (rank <= SMALL_RANK) & CUTOFF_SMALL:
                cut_key = kth_distinct_key(keys, valid, rank, SMALL_RANK)
            else:
                cut_key = kth_largest_key(keys, valid, rank, zero_i, SEARCH_SPLIT)
    else:
        tail = tl.maximum((1.0 - p) / OVERSAMPLE, 1e-30)
        cut = mean + std * std - std * upper_normal_quantile(tl.minimum(tail, 0.999))
        cut = tl.where(usable, cut, -float("inf"))
        cut_key = order_key(cut)
        # more candidates than the scratch holds (3/4 of its slots; p large, flat rows): pass A
        # only gathers the row's statistics and the wide stage takes the row (a band first,
        # docs/algorithm.md §7). The sample's own threshold below can only lower the cutoff
        # (more candidates), so a row the Gaussian cutoff already sends wide skips that search:
        # the same key either way (the search is most of this kernel's time on wide rows)
        predicted = tl.sum((valid & (keys >= cut_key)).to(tl.float32), axis=0) * V / n_valid
        if predicted <= 1.5 * max_cands:
            s_max = tl.max(tl.where(finite, x, -float("inf")), axis=0)
            w = tl.where(finite, tl.exp(tl.where(finite, x, 0.0) - s_max), 0.0)
            s_mass = tl.sum(w, axis=0)
            p_safe = 1.0 - (1.0 - p) / OVERSAMPLE
            if s_mass > 0.0:
                lo = zero_i.to(tl.int64) + KEY_NAN - 1
                hi = zero_i.to(tl.int64) + KEY_MAX
                s_key, r = search_in_registers(keys, w, finite, lo, hi, zero_i,
                                               zero_i.to(tl.float32), zero_i, p_safe * s_mass,
                                               True, SPLIT=SEARCH_SPLIT)
                cut_key = tl.minimum(cut_key, s_key)
            predicted = tl.sum((valid & (keys >= cut_key)).to(tl.float32), axis=0) * V / n_valid
        cut_key = tl.where(predicted > 1.5 * max_cands, KEY_MAX, cut_key)
    if SMALLEST:  # the cutoff value v of -x is -v of x: express it in rank_key(x, SMALLEST) space
        cut_key = rank_key(-key_to_value(cut_key), True)
    return cut_key


@triton.jit
def retry_cutoff_key(row_ptr, V, k, n_cand, max_seg, old_key, CAP_SEG: tl.constexpr,
                     SAMPLE: tl.constexpr, SMALLEST: tl.constexpr):
    """A second σ-cutoff (rank-key space) for a top-k row whose first one, ``old_key``, kept
    fewer than k candidates or overflowed a segment's CAP_SEG slots; returns (found, key).

    Placed from the same sample as the first, now with pass A's exact counts: n_cand entries at
    or above ``old_key``, at most ``max_seg`` in one segment. Too few: the sample rank of
    ``old_key`` plus the sample entries still missing, (k - n_cand) · n / V, plus four standard
    deviations. Overflow: the rank that scales n_cand to halfway between k and the count that
    would fill the fullest segment to 90% (none when that count is below k: ``found`` false).
    The key moves strictly in the needed direction. Only speed depends on it: the retry checks
    its counts again and falls back to the exact full-row search when they fall short.
    """
    offs, valid = sample_offsets(V, SAMPLE)
    x = tl.load(row_ptr + offs, mask=valid, other=0.0).to(tl.float32)
    keys = rank_key(x, SMALLEST)
    n_valid = tl.sum(valid.to(tl.int32), axis=0)
    zero_i = n_valid * 0
    n_valid_f = n_valid.to(tl.float32)
    scale = (zero_i + V).to(tl.float32) / n_valid_f  # row entries per sample entry
    s_old = tl.sum((valid & (keys >= old_key)).to(tl.int32), axis=0).to(tl.float32)
    kf = k.to(tl.float32)
    n_f = n_cand.to(tl.float32)
    overflow = max_seg > CAP_SEG
    need = tl.maximum(kf - n_f, 0.0) / scale
    rank_few = s_old + need + 4.0 * tl.sqrt(need) + 4.0
    n_fit = n_f * (0.9 * CAP_SEG) / tl.maximum(max_seg, 1).to(tl.float32)
    rank_over = s_old * (0.5 * (kf + n_fit)) / tl.maximum(n_f, 1.0)
    rank = tl.where(overflow, rank_over, rank_few)
    rank = tl.minimum(tl.maximum(tl.ceil(rank), 1.0), n_valid_f)
    key = kth_largest_key(keys, valid, rank.to(tl.int32), zero_i, SEARCH_SPLIT)
    new_key = tl.where(overflow, tl.maximum(key, old_key + 1), tl.minimum(key, old_key - 1))
    found = tl.where(overflow, n_fit >= kf, old_key > KEY_FLOOR)
    return found, new_key


@triton.jit
def segment_tile(row_x, offs, V, seg_end, OTHER: tl.constexpr = 0.0):
    """The row's entries at ``offs`` (its own dtype; OTHER, 0.0 or NaN, past V or past the
    segment's end)."""
    return tl.load(row_x + offs, mask=(offs < V) & (offs < seg_end), other=OTHER)


@triton.jit
def tile_ring_start(row_x, offs, V, seg_end, BLOCK: tl.constexpr, AHEAD: tl.constexpr,
                    OTHER: tl.constexpr = 0.0):
    """The first AHEAD (1-4) tiles of a segment's loop, loaded before any is used: the ring
    (t1, t2, t3, t4) that :func:`tile_ring_next` turns (slots past AHEAD repeat t1, unused).
    ``offs``: the first tile's offsets; OTHER: :func:`segment_tile`'s."""
    t1 = segment_tile(row_x, offs, V, seg_end, OTHER)
    t2 = t1
    t3 = t1
    t4 = t1
    if AHEAD >= 2:
        t2 = segment_tile(row_x, offs + BLOCK, V, seg_end, OTHER)
    if AHEAD >= 3:
        t3 = segment_tile(row_x, offs + 2 * BLOCK, V, seg_end, OTHER)
    if AHEAD >= 4:
        t4 = segment_tile(row_x, offs + 3 * BLOCK, V, seg_end, OTHER)
    return t1, t2, t3, t4


@triton.jit
def tile_ring_next(t1, t2, t3, t4, row_x, offs, V, seg_end, BLOCK: tl.constexpr,
                   AHEAD: tl.constexpr, OTHER: tl.constexpr = 0.0):
    """The tile at ``offs`` (the ring's first) and the ring turned by one, the tile AHEAD tiles
    on loaded (issued before the current tile is processed: AHEAD tiles in flight per program;
    which tile a lane holds, and so every sum, does not depend on AHEAD)."""
    current = t1
    if AHEAD == 1:
        t1 = segment_tile(row_x, offs + BLOCK, V, seg_end, OTHER)
    elif AHEAD == 2:
        t1 = t2
        t2 = segment_tile(row_x, offs + 2 * BLOCK, V, seg_end, OTHER)
    elif AHEAD == 3:
        t1 = t2
        t2 = t3
        t3 = segment_tile(row_x, offs + 3 * BLOCK, V, seg_end, OTHER)
    else:
        t1 = t2
        t2 = t3
        t3 = t4
        t4 = segment_tile(row_x, offs + 4 * BLOCK, V, seg_end, OTHER)
    return current, t1, t2, t3, t4


@triton.jit
def packed_prefix_counts(flags, BLOCK: tl.constexpr):
    """Inclusive prefix counts (int32, index order) of a BLOCK-entry tile's flags with one
    32-lane scan instead of one per 32-entry row.

    The tile as R = BLOCK / 32 rows of 32 (entry i = 32 r + t: in the FLAT one-warp layout,
    lane t's register r, so the reshapes move no data). Each lane packs its R row flags into
    8-bit fields of one integer (int32 up to R = 4, int64 up to R = 8), one scan over the 32
    lanes gives every row's prefix in its field, and the rows' totals (one sum of the packed
    words) their offsets: field r of ``(totals << 8) * 0x0101...`` is the count of rows
    before r (every field stays below 256: at most BLOCK <= 256 entries). The same integers as
    ``tl.cumsum(flags, axis=0)``.
    """
    R: tl.constexpr = BLOCK // 32
    if R <= 4:
        word = tl.int32
        ones = 0x01010101
    else:
        word = tl.int64
        ones = 0x0101010101010101
    shifts = (tl.arange(0, R) * 8).to(word)
    rows = tl.reshape(flags.to(word), [R, 32])
    packed = tl.sum(rows << shifts[:, None], axis=0)
    inclusive = tl.cumsum(packed, axis=0)
    offsets = (tl.sum(packed, axis=0) << 8) * ones
    counts = ((inclusive[None, :] >> shifts[:, None]) & 0xFF) + ((offsets >> shifts[:, None]) & 0xFF)
    return tl.reshape(counts.to(tl.int32), [BLOCK])


@triton.jit
def compact_tile(x, tile_start, is_cand, lanes, n_tile, n_cand, row_x, cand_val, cand_idx,
                 BLOCK: tl.constexpr, CAP_SEG: tl.constexpr, SPARSE: tl.constexpr,
                 PACKED: tl.constexpr = False):
    """Append a tile's n_tile candidates (value, index) to the segment's slots in index order.

    A tile with few candidates (the usual case: the σ-cutoff keeps a few hundred entries of a
    row) takes them one at a time, lowest lane first, re-reading each value from the tile just
    loaded (exact bits, -0.0 included); a dense tile uses a prefix sum over the tile, whose cost
    does not depend on the count. PACKED (BLOCK a multiple of 32, at most 256): the prefix sum
    by :func:`packed_prefix_counts` (the same positions).
    """
    if n_tile <= SPARSE:
        prev = n_tile * 0 - 1
        for t in range(0, n_tile):
            lane = tl.min(tl.where(is_cand & (lanes > prev), lanes, BLOCK), axis=0)
            slot = n_cand + t
            if slot < CAP_SEG:
                tl.store(cand_val + slot, tl.load(row_x + tile_start + lane).to(tl.float32))
                tl.store(cand_idx + slot, tile_start + lane)
            prev = lane
    else:
        if PACKED:
            pos = n_cand + packed_prefix_counts(is_cand, BLOCK) - 1
        else:
            pos = n_cand + tl.cumsum(is_cand.to(tl.int32), axis=0) - 1
        keep_slot = is_cand & (pos < CAP_SEG)
        tl.store(cand_val + pos, x, mask=keep_slot)
        tl.store(cand_idx + pos, tile_start + lanes, mask=keep_slot)
