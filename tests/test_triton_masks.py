"""Triton mask kernels against the oracle: full masks compared, never counts.

On a CPU-only machine the kernels run under the Triton interpreter (TRITON_INTERPRET=1) on small
shapes; on a GPU the same tests run compiled, and the ``gpu`` tests add real vocabulary sizes,
large batches, determinism, batch invariance, CUDA-graph capture and > 2**31 elements.
"""

from __future__ import annotations

import numpy as np
import pytest
from _triton_env import DEVICE, ON_GPU, torch  # first: sets up triton

from qrita.backends.triton import ops  # noqa: E402
from qrita.testing import compare, generators  # noqa: E402

TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def _to_device(case_logits: np.ndarray, dtype: str) -> torch.Tensor:
    # a copy: on the CPU (interpreter) torch.from_numpy would share the caller's array
    return torch.from_numpy(np.array(case_logits, copy=True)).to(DEVICE).to(TORCH_DTYPES[dtype])


def _arg(v, dtype=None):
    if isinstance(v, np.ndarray):
        t = torch.from_numpy(v).to(DEVICE)
        return t if dtype is None else t.to(dtype)
    return v


def _host(t: torch.Tensor) -> np.ndarray:
    """Exact host copy for comparison (bfloat16 widened to float32)."""
    t = t.detach().cpu()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy().copy()  # never a live view


def run_and_check(logits_np, dtype, k, p, *, fill=float("-inf"), inplace=False, stats=None):
    x = _to_device(logits_np, dtype)
    x_host = _host(x)
    out = ops.top_k_top_p_mask(x, _arg(k), _arg(p), inplace=inplace, fill=fill, stats=stats)
    if inplace:
        assert out.data_ptr() == x.data_ptr()
    assert out.dtype == x.dtype and out.shape == x.shape
    fill_in_dtype = float(torch.tensor(fill, dtype=x.dtype).float())  # e.g. -1e4 is -9984 in bf16
    compare.assert_mask_matches(_host(out), x_host, k, p, fill=fill_in_dtype)
    return out


def _check_cases(cases, dtype):
    failures = []
    for case in cases:
        try:
            run_and_check(case.logits, dtype, case.k, case.p)
        except AssertionError as err:
            failures.append(f"{case.name}: {err}")
    assert not failures, f"{len(failures)} failing cases:\n" + "\n".join(failures[:10])


def _every(seq, step, offset=0):
    return [c for i, c in enumerate(seq) if i % step == offset % step]


def _site_launches(monkeypatch, *kernels) -> list:
    """Launches of ``kernels`` through ``launch.launch_site`` from now on, as (kernel, grid,
    keyword arguments), in order (the launches still run)."""
    from qrita.backends.triton import launch as launch_module

    seen = []
    real_site = launch_module.launch_site

    def recording_site(site, kernel, grid, *args, **kwargs):
        if any(kernel is k for k in kernels):
            seen.append((kernel, grid, kwargs))
        real_site(site, kernel, grid, *args, **kwargs)

    monkeypatch.setattr(launch_module, "launch_site", recording_site)
    return seen


def _small_slots_table():
    """The launch table with the interpreter's slots (256 per row), on every device: the V ~ 1000
    rows of the wide-stage tests overflow them and take the wide stage on a GPU too (the GPU
    table's 4096 slots would hold them whole). Under the interpreter it is the usual table, but
    for the band: the sample places it at every batch (``hist_small_batch`` 0), as the tests of
    the band's misses and the rounds need; ``histsmall``'s test sets its own."""
    import os
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module

    return lambda V, dtype: replace(launch_module._pipeline_config(
        V, dtype, True, os.environ.get("QRITA_LAUNCH_TABLE", "")), hist_small_batch=0)


def _wide_edge_rows(rng, V: int, grammar_fracs: tuple[float, ...]) -> np.ndarray:
    """:func:`_wide_rows` and rows at the keys' edges for the wide stage: zipf with NaN, a
    grammar row per fraction (NaN injected into the last), Gaussian with +inf, extremes."""
    grammar = [generators.grammar_rows(1, V, f, rng) for f in grammar_fracs]
    grammar[-1] = generators.inject_nan(grammar[-1], 0.3, rng)
    return np.concatenate([
        _wide_rows(rng, V),
        generators.inject_nan(generators.zipf_logits(1, V, 1.1, rng), 0.3, rng),
        *grammar,
        generators.inject_posinf(generators.gaussian_logits(1, V, 2.0, rng), 5, rng),
        generators.extreme_rows(1, V, rng),
    ])


def _sample_offsets_host(V: int, sample: int) -> np.ndarray:
    """The offsets of a row's σ-cutoff sample (``primitives.sample_offsets``) on the host."""
    from qrita.backends.triton.primitives import SAMPLE_CHUNKS

    chunks = int(SAMPLE_CHUNKS.value)
    chunk = sample // chunks
    lane = np.arange(sample)
    offs = (lane // chunk) * max((V // chunks) // 16 * 16, chunk) + lane % chunk
    return offs[offs < V]


def _sample_misled_rows(rng, V: int, sample: int, levels=(2.5, 3.0, 3.5)) -> np.ndarray:
    """(len(levels), V) float32 rows whose σ-cutoff sample (``primitives.sample_offsets``, the
    first ``sample`` offsets) is N(0, 3^2) while every other entry lies near one level a little
    below the sample's top: the cutoff keeps a few sampled entries whose mass falls short of
    p = 0.5 or 0.9, so pass A proves the boundary below them (its candidates' count and mass
    above it) and the row goes wide from there."""
    offs = _sample_offsets_host(V, sample)
    rows = []
    for level in levels:
        x = (level + rng.normal(0.0, 0.05, size=V)).astype(np.float32)
        x[offs] = rng.normal(0.0, 3.0, size=offs.size).astype(np.float32)
        rows.append(x)
    return np.stack(rows)


def _wide_rows(rng, V: int) -> np.ndarray:
    """(5, V) float32 rows for the wide top-p stage: two Zipf and two Gaussian rows (smooth:
    they finish on a band, or miss a small one) and one Gaussian row quantised to steps of 2
    (heavy ties: its band overflows)."""
    return np.concatenate([generators.zipf_logits(2, V, 1.1, rng),
                           generators.gaussian_logits(2, V, 2.0, rng),
                           generators.quantised(generators.gaussian_logits(1, V, 2.0, rng), 2)])


# ------------------------------------------------------------------------------ CPU + GPU
@pytest.mark.parametrize("dtype", list(TORCH_DTYPES))
@pytest.mark.parametrize("V", [1, 2, 3])
def test_tiny_vocab_every_case(V, dtype):
    _check_cases(generators.cases([V], [dtype]), dtype)


@pytest.mark.parametrize("family", generators.FAMILIES)
@pytest.mark.parametrize("dtype", list(TORCH_DTYPES))
def test_odd_vocab_1023(family, dtype):
    cases = list(generators.cases([1023], [dtype], families=[family]))
    # on the interpreter a rotating half of the k/p combinations keeps CI fast; all on a GPU
    step = 1 if ON_GPU else 2
    _check_cases(_every(cases, step, hash(family) % 2), dtype)


@pytest.mark.parametrize("family", ["zipf", "gaussian", "tied_boundary", "quantised2", "grammar",
                                    "posinf", "sorted_asc"])
def test_vocab_4097_above_one_tile(family):
    cases = list(generators.cases([4097], ["float32"], families=[family]))
    _check_cases(_every(cases, 1 if ON_GPU else 4), "float32")


@pytest.mark.parametrize("dtype", list(TORCH_DTYPES))
def test_inplace_and_fill(dtype):
    rng = np.random.default_rng(3)
    x = generators.quantised(generators.gaussian_logits(3, 777, 2.0, rng), 6)
    for k, p, fill in [(5, None, 0.0), (None, 0.6, -1e4), (40, 0.8, float("-inf")),
                       (np.array([1, 0, 900]), np.array([0.5, 0.2, np.nan]), -7.0)]:
        run_and_check(x, dtype, k, p, fill=fill, inplace=True)
        run_and_check(x, dtype, k, p, fill=fill, inplace=False)


def test_row_stride_and_non_contiguous_vocab():
    rng = np.random.default_rng(4)
    wide = torch.from_numpy(generators.gaussian_logits(4, 1500, 2.0, rng)).to(DEVICE)
    rows = wide[:, 100:1100]  # row stride 1500, unit vocab stride: no copy
    want = rows.cpu().numpy().copy()
    out = ops.top_k_top_p_mask(rows, 7, 0.9)
    compare.assert_mask_matches(_host(out), want, 7, 0.9)
    cols = wide.t()[:700, :]  # vocab stride 1500: copied once
    out = ops.top_k_top_p_mask(cols, 3, None, inplace=True)
    assert out.data_ptr() == cols.data_ptr()
    compare.assert_mask_matches(_host(out), _host(cols.contiguous()), 3, None)


def test_per_row_parameter_dtypes():
    rng = np.random.default_rng(5)
    x = generators.zipf_logits(3, 999, 1.1, rng)
    k = np.array([3, 0, 998])
    p = np.array([0.5, 0.95, 1e-9])
    for k_dtype, p_dtype in [(torch.int32, torch.float32), (torch.int64, torch.float64),
                             (torch.int16, torch.float16)]:
        xt = _to_device(x, "float32")
        out = ops.top_k_top_p_mask(xt, _arg(k, k_dtype), _arg(p, p_dtype))
        p_used = torch.from_numpy(p).to(p_dtype).double().numpy()
        compare.assert_mask_matches(_host(out), x, k, p_used)


def test_both_paths_are_exercised():
    """The candidate path and the exact fallback both run (and both are right) on these inputs."""
    rng = np.random.default_rng(6)
    x = np.concatenate([generators.gaussian_logits(2, 1023, 2.0, rng),
                        generators.sorted_rows(1, 1023, True, rng),
                        generators.all_equal_rows(1, 1023)])
    for k, p in [(5, None), (None, 0.9), (5, 0.5), (1000, None)]:
        stats = torch.zeros((x.shape[0], ops.STATS_WIDTH), dtype=torch.int32, device=DEVICE)
        run_and_check(x, "float32", k, p, stats=stats)
        mode = stats[:, 0].cpu().numpy()
        assert set(mode.tolist()) <= {1, 2, 4}
        if k == 5:
            assert (mode[:2] == 1).all(), "gaussian rows with k=5 must take the candidate path"
        if k == 1000 or p == 0.9:
            assert (mode >= 2).any(), "these rows must need a fallback"
        assert (stats[:, 4].cpu().numpy() <= 64).all()


def test_top_k_retry_is_exact():
    """Top-k rows whose σ-cutoff keeps fewer than k candidates or overflows a segment's slots
    run pass A again at a second cutoff (stats column 14) instead of the single-program
    fallback; every mask is exact, with top-p after top-k too (per-row k and p, some rows
    without top-k), and retried rows end on the candidate path. (Here the retries are overflows:
    the interpreter's table has 16 slots per segment; the GPU test covers rows with too few.)"""
    rng = np.random.default_rng(21)
    V = 4001
    x = np.concatenate([generators.zipf_logits(4, V, 1.1, rng),
                        generators.gaussian_logits(4, V, 2.0, rng)])
    retried_rows = retried_hits = 0
    for k, p in [(60, None), (100, None), (np.array([60, 0, 100, 80, 70, 60, 90, 0]),
                                          np.array([0.9, 0.5, 1.0, 0.99, 0.3, 0.8, 0.95, 0.9]))]:
        stats = torch.zeros((x.shape[0], ops.STATS_WIDTH), dtype=torch.int32, device=DEVICE)
        run_and_check(x, "float32", k, p, stats=stats)
        mode = stats[:, 0].cpu().numpy()
        retried = stats[:, 14].cpu().numpy() == 1
        assert set(mode.tolist()) <= {1, 2, 4}, mode
        retried_rows += int(retried.sum())
        retried_hits += int((mode[retried] == 1).sum())
    # (some retries still fall short with so few slots: the fallback finishes those, exactly)
    assert retried_rows > 0 and retried_hits > 0, (retried_hits, retried_rows)


def test_top_k_top_p_fallback_below_the_cutoff(monkeypatch):
    """A top-k + top-p row whose σ-cutoff keeps fewer than k candidates (its only large entries
    are the ones its sample reads) and that does not retry takes the full-row fallback. Pass A
    sums no masses for a row with top-k on, so that search starts from the row's top instead of
    below the cutoff: the masks are exact, boundary ties included."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module

    table = launch_module.pipeline_config
    monkeypatch.setattr(launch_module, "pipeline_config",
                        lambda V, dtype: replace(table(V, dtype), retry_min_k=1 << 30))
    V, k = 2001, 50
    sample = launch_module.pipeline_config(V, torch.float32).sample
    offs = _sample_offsets_host(V, sample)
    rng = np.random.default_rng(31)
    x = rng.normal(0.0, 1.0, (3, V)).astype(np.float32) - 20.0
    x[:, offs] = 10.0 + rng.normal(0.0, 1.0, (3, sample)).astype(np.float32)
    x[1, offs] = np.round(x[1, offs] * 2.0) / 2.0  # copies of the boundary values
    order = offs[np.argsort(-x[2, offs], kind="stable")]
    x[2, order[40:70]] = x[2, order[40]]  # 30 copies across the top-k boundary (rank 50)
    for p in (0.9, 0.5, 1.0):
        stats = torch.zeros((x.shape[0], ops.STATS_WIDTH), dtype=torch.int32, device=DEVICE)
        run_and_check(x, "float32", k, p, stats=stats)
        mode = stats[:, 0].cpu().numpy()
        n_cand = stats[:, 3].cpu().numpy()
        assert (mode == 2).all() and (n_cand < k).all(), (mode, n_cand)


def test_dense_and_slot_candidate_searches():
    """Rows with at most DENSE candidates are searched densely packed, rows with more over every
    scratch slot; both exact (and the tiles' sparse and prefix-sum compactions feed both)."""
    from qrita.backends.triton.launch import pipeline_config

    rng = np.random.default_rng(9)
    V = 1023
    dense = pipeline_config(V, torch.float32).dense
    x = np.concatenate([generators.gaussian_logits(3, V, 2.0, rng),
                        generators.zipf_logits(2, V, 1.1, rng)])
    counts = []
    for k in (3, 40, 120):
        stats = torch.zeros((x.shape[0], ops.STATS_WIDTH), dtype=torch.int32, device=DEVICE)
        run_and_check(x, "float32", k, None, stats=stats)
        mode = stats[:, 0].cpu().numpy()
        counts += stats[:, 3].cpu().numpy()[mode == 1].tolist()
    assert min(counts) <= dense < max(counts), (dense, counts)


@pytest.mark.parametrize("hist_bins", [0, 256])
def test_top_p_heavy_ties_stay_on_the_segmented_path(monkeypatch, hist_bins):
    """Rows whose top-p boundary value has more copies than the scratch holds are finished by
    the segmented stage (mode 4), not the single-program fallback, and stay exact; with the band
    from a sample and from a count histogram (``hist_bins``; the GPU's float32 default)."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module

    table = launch_module.pipeline_config
    monkeypatch.setattr(launch_module, "pipeline_config",
                        lambda V, dtype: replace(table(V, dtype), hist_bins=hist_bins))
    rng = np.random.default_rng(8)
    x = np.concatenate([generators.quantised(generators.gaussian_logits(2, 3001, 2.0, rng), 2),
                        generators.all_equal_rows(1, 3001),
                        generators.bf16_round(generators.zipf_logits(1, 3001, 1.1, rng))])
    for p in (0.3, 0.9):
        stats = torch.zeros((x.shape[0], ops.STATS_WIDTH), dtype=torch.int32, device=DEVICE)
        run_and_check(x, "float32", None, p, stats=stats)
        assert (stats[:, 0].cpu().numpy() == 4).all(), stats[:, 0]


def test_top_p_band_hits_and_misses_are_exact(monkeypatch):
    """Wide top-p rows finish on the sampled band (stats column 13 = 1) on smooth rows and fall
    back to the rounds when it overflows (heavy ties); both exact."""
    from qrita.backends.triton import launch as launch_module

    monkeypatch.setattr(launch_module, "pipeline_config", _small_slots_table())
    rng = np.random.default_rng(13)
    V = 1000
    smooth = np.concatenate([generators.zipf_logits(2, V, 1.1, rng),
                             generators.gaussian_logits(2, V, 2.0, rng)])
    tied = generators.quantised(generators.gaussian_logits(2, V, 2.0, rng), 2)
    hits = []
    for x in (smooth, tied):
        for p in (0.9, 0.99):
            stats = torch.zeros((x.shape[0], ops.STATS_WIDTH), dtype=torch.int32, device=DEVICE)
            run_and_check(x, "float32", None, p, stats=stats)
            assert (stats[:, 0].cpu().numpy() == 4).all(), stats[:, 0]
            hits.append(stats[:, 13].cpu().numpy())
    assert hits[0].any() and hits[1].any(), "smooth rows must finish on the band"
    assert not hits[2].any() and not hits[3].any(), "tied rows overflow the band: rounds"


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_narrow_keyed_band_gives_the_same_answers(monkeypatch, dtype):
    """``keynarrow=8x0`` (``key_narrow``): a 16-bit row's keyed band of at most 8 values is
    widened to 8 values (not 64) and counted without a histogram; every row's mask is the
    oracle's and its mode, boundary key and tie budget are those of the 64-value band; rows
    with NaN, +inf and -inf, heavy ties, at both placements (sample and histogram). Some rows
    finish on a band of at most 8 values."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module

    table = _small_slots_table()
    settings = {}
    monkeypatch.setattr(launch_module, "pipeline_config",
                        lambda V, dtype: replace(table(V, dtype), **settings))
    rng = np.random.default_rng(61)
    V = 1000
    x = np.concatenate([_wide_edge_rows(rng, V, grammar_fracs=(0.5,)),
                        generators.quantised(generators.zipf_logits(2, V, 1.1, rng), 0.25)])
    shift = {"bfloat16": 16, "float16": 13}[dtype]
    narrow_finished = 0
    for hist_batch in (0, 64):
        for p in (0.9, 0.99):
            answers = []
            for narrow in (0, 8):
                settings.update(key_narrow=narrow, hist_small_batch=hist_batch)
                stats = torch.zeros((x.shape[0], ops.STATS_WIDTH), dtype=torch.int32,
                                    device=DEVICE)
                run_and_check(x, dtype, None, p, stats=stats)
                answers.append(stats.cpu().numpy())
            wide_rows, narrow_stats = answers[0][:, 0] == 4, answers[1]
            np.testing.assert_array_equal(answers[1][:, :3], answers[0][:, :3], err_msg=str(p))
            band_lo = narrow_stats[:, 5].astype(np.int64)  # lo + 1
            band_hi = narrow_stats[:, 6].astype(np.int64)
            span = (band_hi >> shift) - (band_lo >> shift)
            narrow_finished += int((wide_rows & (narrow_stats[:, 13] == 1) & (span < 8)).sum())
    assert narrow_finished >= 4, narrow_finished


@pytest.mark.parametrize("hist_bins", [0, 256])
def test_top_p_near_one_band_at_the_bottom_is_exact(monkeypatch, hist_bins):
    """p a rounding error below 1: the band's masses, summed in another order than the row's
    (here another compaction tile than the candidate pass, as on the GPU), may fall short of the
    target with no entry below the band; the row must still end on the band (the whole tie group
    kept), never on an empty side of it. (The H200 failure this guards against,
    test_gpu_real_vocab[32000-float32] with a 256-entry compaction tile, did not reproduce under
    the interpreter, whose sums round differently: the GPU test is its regression test.) With
    the band from a sample and from a count histogram (``hist_bins``)."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module

    table = launch_module.pipeline_config
    monkeypatch.setattr(launch_module, "pipeline_config",
                        lambda V, dtype: replace(table(V, dtype), block_wide=64,
                                                 hist_bins=hist_bins))
    rng = np.random.default_rng(17)
    V = 4099
    rows = [generators.two_level_rows(1, V, n_high, gap)
            for n_high, gap in [(1, 2.0), (3, 2.0), (7, 0.5), (2, 5.0), (5, 1.0), (11, 3.0)]]
    x = np.concatenate(rows + [generators.gaussian_logits(2, V, 2.0, rng)])
    for p in (float(np.nextafter(np.float32(1), np.float32(0))), 1 - 1e-6):
        run_and_check(x, "float32", None, p)
    run_and_check(x, "bfloat16", None, 1 - 1e-7)


#: pass A's kernel tests: V, segment length, tile, slots per segment, segments rounded up to
#: a power of two (V = 1000: eight segments of four tiles, the last one short)
_PASS_A_SHAPE = (1000, 128, 32, 64, 8)


def _pass_a_rows(dtype: str, smallest: bool, seed: int):
    """Every generator family's rows at V = 1000 for pass A's kernel tests: the device tensor,
    the values the kernel reads (widened exactly) and their ranking keys (negated for
    ``smallest``; NaN keeps the lowest key)."""
    from qrita.reference import keys as ref_keys

    V = _PASS_A_SHAPE[0]
    rng = np.random.default_rng(seed)
    x = np.concatenate([rows for _, rows in generators._family_batches(V, rng)])
    xt = _to_device(generators.to_dtype(x, dtype), dtype)
    xh = _host(xt)
    rank = ref_keys.order_key(xh).astype(np.int64)
    if smallest:
        key_nan = -(2**31)
        rank = np.where(rank == key_nan, key_nan, ~rank)
    return xt, xh, rank


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("smallest", [False, True])
def test_pass_a_candidate_top_key(dtype, smallest):
    """Pass A without top-p taking a segment's largest key over its candidates only
    (``candidates_kernel``'s CAND_TOP, the launch table's ``candtop``): the same candidates and
    counts as the full scan (whose counts and largest keys NumPy checks); a segment holding a
    candidate reports its largest key exactly, one without any the bound
    max(cutoff - 1, KEY_FLOOR), which lies at or above every key it holds. Every generator family at V = 1000 (segments
    of 128 entries, the last one short); cutoffs from each row's own quantiles (between
    representable values), an entry's key and the keys beside it, the floor and the top."""
    from qrita.backends.triton import pipeline
    from qrita.reference import keys as ref_keys

    KEY_FLOOR, KEY_NAN = -2139095041, -(2**31)
    V, seg_len, block, cap_seg, nseg_p2 = _PASS_A_SHAPE
    nseg = -(-V // seg_len)
    xt, xh, rank = _pass_a_rows(dtype, smallest, seed=59)
    B = xh.shape[0]
    # cutoffs: a high and a middle quantile of each row's keys, the floor, above every key
    # cutoffs: a high and a middle quantile of each row's keys (between representable values),
    # the floor, above every key, an entry's own key and the keys beside it
    entry = np.sort(rank, axis=1)[:, -20]
    choices = [np.quantile(rank, 0.995, axis=1), np.quantile(rank, 0.5, axis=1),
               np.full(B, KEY_NAN), np.full(B, 2**31 - 1), entry, entry - 1, entry + 1]
    cutoff = np.stack(choices, axis=1)[np.arange(B), np.arange(B) % len(choices)]
    cutoff = np.clip(cutoff, KEY_NAN, 2**31 - 1).astype(np.int32)
    outs = {}
    for cand_top in (False, True):
        cand_val = torch.zeros((B, nseg_p2 * cap_seg), dtype=torch.float32, device=DEVICE)
        cand_idx = torch.zeros((B, nseg_p2 * cap_seg), dtype=torch.int32, device=DEVICE)
        seg_f = torch.zeros((B, nseg, 4), dtype=torch.float32, device=DEVICE)
        seg_i = torch.zeros((B, nseg, 8), dtype=torch.int32, device=DEVICE)
        dummy_i = torch.zeros(B * 16, dtype=torch.int32, device=DEVICE)
        dummy_k = torch.zeros(B, dtype=torch.int64, device=DEVICE)
        dummy_p = torch.zeros(B, dtype=torch.float32, device=DEVICE)
        pipeline.candidates_kernel[(B, nseg)](
            xt, dummy_k, dummy_p, torch.from_numpy(cutoff).to(DEVICE), V, xt.stride(0), seg_len,
            50, 1.0, dummy_i, cand_val, cand_idx, seg_f, seg_i, HAS_K=True, K_ARRAY=False,
            HAS_P=False, P_ARRAY=False, SMALLEST=smallest, BLOCK=block, CAP_SEG=cap_seg,
            NSEG_P2=nseg_p2, SPARSE=4, ONLY_RETRY=False, LEAN=False, CAND_TOP=cand_top,
            num_warps=1)
        outs[cand_top] = (seg_i.cpu().numpy(), cand_val.cpu().numpy(), cand_idx.cpu().numpy())
    (si_off, cv_off, ci_off), (si_on, cv_on, ci_on) = outs[False], outs[True]
    # the kernel's test: one float compare with the cutoff key's value (NaN never passes)
    floor_cut = np.maximum(cutoff.astype(np.int64), KEY_FLOOR)
    bound_key = (~floor_cut if smallest else floor_cut).astype(np.int32)
    bound_val = ref_keys.key_to_value(bound_key)[:, None]
    with np.errstate(invalid="ignore"):
        passes = (xh <= bound_val) if smallest else (xh >= bound_val)
    top_bound = np.maximum(floor_cut - 1, KEY_FLOOR)
    count = si_off[:, :, 0]
    assert np.array_equal(si_on[:, :, 0], count)
    for b in range(B):
        for s in range(nseg):
            cols = slice(s * seg_len, min(V, (s + 1) * seg_len))
            assert count[b, s] == int(passes[b, cols].sum()), (b, s)
            seg = rank[b, cols]
            finite = seg[seg != KEY_NAN]
            assert si_off[b, s, 3] == (int(finite.max()) if finite.size else KEY_FLOOR), (b, s)
            n = min(count[b, s], cap_seg)
            sl = slice(s * cap_seg, s * cap_seg + n)
            assert np.array_equal(cv_on[b, sl], cv_off[b, sl]), (b, s)
            assert np.array_equal(ci_on[b, sl], ci_off[b, sl]), (b, s)
            if count[b, s] > 0:
                assert si_on[b, s, 3] == si_off[b, s, 3], (b, s)
            else:
                assert si_on[b, s, 3] == top_bound[b] >= si_off[b, s, 3], (b, s)
    assert (count > 0).any() and (count == 0).any()


@pytest.mark.parametrize("lean", [True, False])
def test_pass_a_masses_are_exact(monkeypatch, lean):
    """Pass A's masses relative to a fixed reference (the launch table's ``lean``, the default:
    the first tile's largest finite entry) give the oracle's masks on every generator family:
    the segments whose max lies far above the reference (extremes, peaked, sorted rows), that
    hold +inf or whose first tile has no finite entry take the online form again. The online
    form throughout (``lean=0x0``) does too."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module

    table = launch_module.pipeline_config
    monkeypatch.setattr(launch_module, "pipeline_config",
                        lambda V, dtype: replace(table(V, dtype), lean_mass=lean))
    lean_flags = []
    real_launch = launch_module.launch

    def recording_launch(kernel, grid, *args, **kwargs):
        if kernel is launch_module.candidates_kernel:
            lean_flags.append(kwargs["LEAN"])
        real_launch(kernel, grid, *args, **kwargs)

    monkeypatch.setattr(launch_module, "launch", recording_launch)
    site_launches = _site_launches(monkeypatch, launch_module.candidates_kernel)
    V = 1001
    rng = np.random.default_rng(23)
    # a first tile without finite entries before entries far below 0 (the reference defaults
    # above them), and one entry far above its segment's first tile
    low = np.full((1, V), -np.inf, dtype=np.float32)
    low[0, 200:] = generators.gaussian_logits(1, V - 200, 1.0, rng)[0] - 200.0
    jump = generators.gaussian_logits(1, V, 1.0, rng)
    jump[0, 700] = 100.0
    x = np.concatenate([batch for _, batch in generators._family_batches(V, rng)] + [low, jump])
    B = x.shape[0]
    k_rows = np.resize(np.array([0, 1, 50, V, 7], dtype=np.int64), B)
    for k, p in [(None, 0.9), (k_rows, 1 - 1e-7)]:
        run_and_check(x, "float32", k, p)
    lean_flags += [kwargs["LEAN"] for _, _, kwargs in site_launches]
    assert lean_flags and all(f == lean for f in lean_flags), lean_flags  # the form asked for


def test_small_batch_pass_a_tile_gives_the_same_masks(monkeypatch):
    """Top-k alone at small batches may run pass A with its own (tile, warps) (the launch
    table's ``candsmall``): the masks are the oracle's, and so are top_k's selections; batches
    above SMALL_BATCH_ROWS and calls with top-p keep the usual pass A."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module
    from qrita.reference import oracle

    table = launch_module.pipeline_config
    small_block = table(1001, torch.float32).block_cand // 2
    monkeypatch.setattr(launch_module, "pipeline_config",
                        lambda V, dtype: replace(table(V, dtype), block_cand_small=small_block,
                                                 warps_cand_small=2))
    monkeypatch.setenv("QRITA_ONE_LAUNCH", "0")  # the pipeline at small batches, as in a graph
    launches = _site_launches(monkeypatch, launch_module.candidates_kernel)
    monkeypatch.setattr(launch_module, "SMALL_BATCH_ROWS", 4)
    V = 1001
    rng = np.random.default_rng(37)
    x = np.concatenate([batch for _, batch in generators._family_batches(V, rng)])[:6]
    for rows in (3, 6):
        for k, p in [(1, None), (50, None), (V - 1, None), (7, 0.9)]:
            run_and_check(x[:rows], "float32", k, p)
        values, indices = ops.top_k(_to_device(x[:rows], "float32"), 20)
        want = oracle.top_k(x[:rows], 20)
        np.testing.assert_array_equal(_host(indices), want.indices)
        np.testing.assert_array_equal(_host(values), want.values)
    usual = table(V, torch.float32)
    blocks = [(grid[0], kw["HAS_P"], kw["BLOCK"], kw["num_warps"]) for _, grid, kw in launches]
    for batch, has_p, block, warps in blocks:
        small = batch <= 4 and not has_p
        assert (block, warps) == ((small_block, 2) if small else
                                  (usual.block_cand, usual.warps_cand or usual.warps_stream)), \
            (batch, has_p, block, warps)
    assert any(b[2] == small_block for b in blocks) and any(b[2] != small_block for b in blocks)


def test_mid_batch_pass_a_tile_gives_the_same_masks(monkeypatch):
    """``candmid``: top-k alone (and top-k + top-p with a scalar k, with ``cand_small_kp``) at
    SMALL_BATCH_ROWS < B <= ``cand_mid_rows`` runs pass A with its own (tile, warps): the masks
    and top_k's selections are the oracle's, a row's top-k + top-p mask is bit for bit the same
    in a batch that takes the mid tile as alone; smaller and larger batches, per-row k with
    top-p and top-p alone keep their usual pass A."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module
    from qrita.reference import oracle

    table = launch_module.pipeline_config
    V = 1001
    usual = table(V, torch.float32)
    mid_block = usual.block_cand // 4
    monkeypatch.setattr(launch_module, "pipeline_config",
                        lambda V, dtype: replace(table(V, dtype), block_cand_mid=mid_block,
                                                 warps_cand_mid=2, cand_mid_rows=4,
                                                 cand_small_kp=True))
    monkeypatch.setenv("QRITA_ONE_LAUNCH", "0")
    monkeypatch.setattr(launch_module, "SMALL_BATCH_ROWS", 1)
    launches = _site_launches(monkeypatch, launch_module.candidates_kernel)
    rng = np.random.default_rng(53)
    families = dict(generators._family_batches(V, rng))
    x = np.concatenate([families[name][:1] for name in
                        ("zipf", "posinf", "inf_nan_mix", "tied_boundary", "grammar", "nan")])
    usual_kw = (usual.block_cand, usual.warps_cand or usual.warps_stream)

    def tiles():
        return {(grid[0], kw["HAS_P"], kw["K_ARRAY"]): (kw["BLOCK"], kw["num_warps"])
                for _, grid, kw in launches}

    for rows in (3, 4, 6):  # mid, mid, above cand_mid_rows
        for k in (1, 50, V - 1):
            run_and_check(x[:rows], "float32", k, None)
        values, indices = ops.top_k(_to_device(x[:rows], "float32"), 20)
        want = oracle.top_k(x[:rows], 20)
        np.testing.assert_array_equal(_host(indices), want.indices)
        np.testing.assert_array_equal(_host(values), want.values)
    seen = tiles()
    assert seen[(3, False, False)] == seen[(4, False, False)] == (mid_block, 2), seen
    assert seen[(6, False, False)] == usual_kw, seen
    for k, p in [(7, 0.9), (1, 1 - 1e-7)]:
        launches.clear()
        whole = run_and_check(x[:3], "float32", k, p)  # the mid tile
        assert tiles() == {(3, True, False): (mid_block, 2)}, tiles()
        for row in range(3):
            alone = run_and_check(x[row:row + 1], "float32", k, p)  # B = 1: the usual tile
            assert torch.equal(alone[0].view(torch.int32), whole[row].view(torch.int32)), (k, p, row)
    launches.clear()
    run_and_check(x[:3], "float32", np.full(3, 7, dtype=np.int64), 0.9)  # per-row k + top-p
    run_and_check(x[:3], "float32", None, 0.9)  # top-p alone
    assert set(tiles().values()) == {usual_kw}, tiles()


def test_small_batch_pass_a_whole_segment_tile(monkeypatch):
    """``candsmall``'s tile may exceed ``block``, up to the whole segment, and append its
    candidates by prefix sums only (``sparsesmall=0x0``); the search and the cutoff kernel may
    take their own warps there (``searchb``, ``cutoffb``): the masks and top_k's selections are
    still the oracle's. A tile that does not divide the segment is halved until it does (a
    tile must never reach into the next segment). With top-p the warps stay the usual ones (the
    order of float sums may follow them, and a row's mask must not depend on its batch)."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module
    from qrita.reference import oracle

    assert launch_module._tile_in_segment(4096, 8192) == 4096
    assert launch_module._tile_in_segment(4096, 10240) == 2048
    assert launch_module._tile_in_segment(0, 256) == 0
    table = launch_module.pipeline_config
    V = 1001
    usual = table(V, torch.float32)
    whole_segment = usual.seg_len
    assert whole_segment > usual.block  # the tile spans more than one block
    small_warps = 1
    assert small_warps not in (usual.warps_search, usual.warps_small, usual.warps_stream,
                               usual.warps_cutoff)
    monkeypatch.setattr(launch_module, "pipeline_config",
                        lambda V, dtype: replace(table(V, dtype), block_cand_small=whole_segment,
                                                 warps_cand_small=4, sparse_small=0,
                                                 warps_search_small_batch=small_warps,
                                                 warps_cutoff_small_batch=small_warps,
                                                 cand_small_kp=True))
    monkeypatch.setenv("QRITA_ONE_LAUNCH", "0")
    launches = _site_launches(monkeypatch, launch_module.candidates_kernel,
                              launch_module.threshold_kernel, launch_module.cutoff_kernel)
    rng = np.random.default_rng(41)
    x = np.concatenate([batch for _, batch in generators._family_batches(V, rng)])[:8]
    for k in (1, 50, V - 1):
        run_and_check(x, "float32", k, None)
    values, indices = ops.top_k(_to_device(x, "float32"), 20)
    want = oracle.top_k(x, 20)
    np.testing.assert_array_equal(_host(indices), want.indices)
    np.testing.assert_array_equal(_host(values), want.values)

    def seen(kernel):
        return [kw for kern, _, kw in launches if kern is kernel]

    assert {(kw["BLOCK"], kw["SPARSE"]) for kw in seen(launch_module.candidates_kernel)} == {
        (whole_segment, 0)}
    dense_stages = [kw for kw in seen(launch_module.threshold_kernel) if kw["STAGE"] != 2]
    assert dense_stages and {kw["num_warps"] for kw in dense_stages} == {small_warps}
    assert {kw["num_warps"] for kw in seen(launch_module.cutoff_kernel)} == {small_warps}
    launches.clear()
    run_and_check(x[:2], "float32", 7, 0.9)  # top-k + top-p: the small tile, the usual warps
    assert {kw["BLOCK"] for kw in seen(launch_module.candidates_kernel)} == {whole_segment}
    assert small_warps not in {kw["num_warps"] for kw in seen(launch_module.threshold_kernel)}
    assert small_warps not in {kw["num_warps"] for kw in seen(launch_module.cutoff_kernel)}


def test_small_batch_pass_a_tile_with_top_p_is_batch_invariant(monkeypatch):
    """``candsmallkp``: top-k + top-p with a scalar k in (0, V) at small batches may run pass A
    with ``candsmall``'s tile too (its rows sum no masses in pass A; +inf rows only count).
    A row's mask is then bit for bit the same alone (small tile) as in a larger batch (usual
    tile), and the oracle's; per-row k and top-p alone keep the usual pass A."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module

    table = launch_module.pipeline_config
    small_block = table(1001, torch.float32).block_cand // 2
    monkeypatch.setattr(launch_module, "pipeline_config",
                        lambda V, dtype: replace(table(V, dtype), block_cand_small=small_block,
                                                 warps_cand_small=2, cand_small_kp=True))
    launches = _site_launches(monkeypatch, launch_module.candidates_kernel)

    def blocks():
        return [(grid[0], kwargs["BLOCK"]) for _, grid, kwargs in launches]

    monkeypatch.setattr(launch_module, "SMALL_BATCH_ROWS", 4)
    V = 1001
    rng = np.random.default_rng(43)
    families = dict(generators._family_batches(V, rng))
    x = np.concatenate([families[name][:1] for name in
                        ("zipf", "posinf", "inf_nan_mix", "tied_boundary", "grammar", "nan")])
    usual = table(V, torch.float32).block_cand
    for k, p in [(7, 0.9), (50, 0.5), (1, 1 - 1e-7)]:
        launches.clear()
        whole = run_and_check(x, "float32", k, p)  # 6 rows: the usual tile
        for row in range(x.shape[0]):
            alone = run_and_check(x[row:row + 1], "float32", k, p)  # the small tile
            assert torch.equal(alone[0].view(torch.int32), whole[row].view(torch.int32)), (k, p, row)
        assert {b for batch, b in blocks() if batch == 6} == {usual}, blocks()
        assert {b for batch, b in blocks() if batch == 1} == {small_block}, blocks()
    launches.clear()
    k_rows = np.full(2, 7, dtype=np.int64)
    run_and_check(x[:2], "float32", k_rows, 0.9)  # per-row k: the usual tile
    run_and_check(x[:2], "float32", None, 0.9)  # top-p alone: the usual tile
    assert blocks() and {b for _, b in blocks()} == {usual}, blocks()


@pytest.mark.parametrize("one", ["0", "1"])
def test_small_k_search_capacity_gives_the_same_answers(monkeypatch, one):
    """Top-k alone with a scalar k that takes the small-k search runs with ``cap_small`` slots
    per row (a smaller scratch), in the pipeline and in the one-launch kernels: masks and
    top_k's selections are the oracle's, also on rows whose segments overflow those slots (they
    take the exact fallback); other calls keep the usual slots."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module
    from qrita.reference import oracle

    V = 1001
    table = launch_module.pipeline_config
    usual = replace(table(V, torch.float32), dense_small=64)
    small_cap = 16 * usual.nseg_p2  # 16 slots per segment: sorted and tied rows overflow
    monkeypatch.setattr(launch_module, "pipeline_config",
                        lambda V, dtype: replace(table(V, dtype), dense_small=64,
                                                 cap_small=small_cap))
    monkeypatch.setenv("QRITA_ONE_LAUNCH", one)  # "0": the pipeline, as in a graph
    launches = _site_launches(monkeypatch, launch_module.candidates_kernel,
                              launch_module.one_launch_topk_mask_kernel,
                              launch_module.one_launch_select_kernel)
    rng = np.random.default_rng(41)
    x = np.concatenate([batch for _, batch in generators._family_batches(V, rng)])
    x = np.concatenate([x, np.sort(generators.gaussian_logits(2, V, 2.0, rng), axis=1)])
    if one == "1":
        x = x[::3][:16]  # the one-launch kernels take at most 16 rows
    stats = torch.zeros((x.shape[0], ops.STATS_WIDTH), dtype=torch.int32, device=DEVICE)
    small_ks = [k for k in (1, 10, 20) if launch_module.small_k_search(usual, V, k)]
    assert small_ks == [1, 10], small_ks  # 20 keeps the usual slots
    fell_back = False
    for k in (1, 10, 20):
        launches.clear()
        stats.zero_()
        # (stats need the pipeline: in one-launch mode the mask runs without them)
        run_and_check(x, "float32", k, None, stats=stats if one == "0" else None)
        fell_back |= k in small_ks and bool((stats[:, 0] == 2).any())
        values, indices = ops.top_k(_to_device(x, "float32"), k)
        want = oracle.top_k(x, k)
        np.testing.assert_array_equal(_host(indices), want.indices)
        np.testing.assert_array_equal(_host(values), want.values)
        want_cap = small_cap // usual.nseg_p2 if k in small_ks else usual.cap_seg
        caps = [(kernel.fn.__name__, kwargs["CAP_SEG"]) for kernel, _, kwargs in launches]
        kernels = {name for name, _ in caps}
        assert kernels == ({"candidates_kernel"} if one == "0" else
                           {"one_launch_topk_mask_kernel", "one_launch_select_kernel"}), kernels
        assert all(c == want_cap for _, c in caps), (k, caps)
    # some row overflowed the small slots and still matched the oracle (the pipeline's stats)
    assert fell_back or one == "1"


@pytest.mark.parametrize("one", ["0", "1"])
def test_large_k_capacity_keeps_the_candidate_path(monkeypatch, one):
    """Top-k alone with a scalar k whose candidates overflow the usual slots runs with more
    slots per row (``large_k_config``, the launch table's ``capk``), in the pipeline and in the
    one-launch kernels: rows that took the full-row fallback with the usual slots keep the
    candidate path (the pipeline's stats), and masks and top_k's selections (sorted and in
    index order) are the oracle's; with ``capk=0x0`` the usual slots, the fallback, the same
    answers. A k needing more than half the row keeps the usual slots."""
    from qrita.backends.triton import launch as launch_module
    from qrita.reference import oracle

    # (the interpreter's table has it off: its few slots keep CI's rows on the fallback)
    V, k, on = ((4096, 100, "capk=1024x0") if launch_module.interpreting()
                else (131072, 4096, ""))
    monkeypatch.setenv("QRITA_LAUNCH_TABLE", on)
    usual = launch_module.pipeline_config(V, torch.float32)
    big = launch_module.large_k_config(usual, V, k)
    assert big is not None and big.cap_seg > usual.cap_seg and big.cap <= usual.cap_large
    assert launch_module.large_k_config(usual, V, V - 1) is None  # more than half the row
    monkeypatch.setenv("QRITA_ONE_LAUNCH", one)  # "0": the pipeline, as in a graph
    launches = _site_launches(monkeypatch, launch_module.candidates_kernel,
                              launch_module.one_launch_topk_mask_kernel,
                              launch_module.one_launch_select_kernel)
    rng = np.random.default_rng(43)
    x = np.concatenate([generators.zipf_logits(4, V, 1.1, rng),
                        generators.gaussian_logits(3, V, 2.0, rng),
                        generators.quantised(generators.gaussian_logits(2, V, 2.0, rng), 8),
                        np.sort(generators.gaussian_logits(1, V, 2.0, rng), axis=1)])
    stats = torch.zeros((x.shape[0], ops.STATS_WIDTH), dtype=torch.int32, device=DEVICE)
    fallback_rows = {}
    for table, want_cap in ((on, big.cap_seg), ("capk=0x0", usual.cap_seg)):
        monkeypatch.setenv("QRITA_LAUNCH_TABLE", table)
        launches.clear()
        stats.zero_()
        run_and_check(x, "float32", k, None, stats=stats if one == "0" else None)
        fallback_rows[table] = (stats[:, 0] == 2).cpu().numpy()
        for is_sorted in (True, False):
            values, indices = ops.top_k(_to_device(x, "float32"), k, sorted=is_sorted)
            want = oracle.top_k(x, k, sorted=is_sorted)
            np.testing.assert_array_equal(_host(indices), want.indices)
            np.testing.assert_array_equal(_host(values), want.values)
        caps = {(kernel.fn.__name__, kwargs["CAP_SEG"]) for kernel, _, kwargs in launches}
        assert caps and {c for _, c in caps} == {want_cap}, (table, caps)
    if one == "0":  # the zipf and Gaussian rows: mostly the fallback with the usual slots,
        # never with the larger (the tied and sorted rows, whose candidates crowd into a few
        # segments, may take it with both; H100: 10 rows and 3)
        assert (fallback_rows["capk=0x0"][:7].sum() >= 5
                and not fallback_rows[on][:7].any()), fallback_rows


def test_wide_rounds_split_over_programs_are_exact(monkeypatch):
    """The 16-way rounds with each segment split over two programs (the launch table's
    ``roundsplit``; partial counts merged in their fixed order) give the oracle's masks on rows
    the band misses (heavy ties: the band overflows), which do run the rounds."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module

    table = _small_slots_table()
    monkeypatch.setattr(launch_module, "pipeline_config",
                        lambda V, dtype: replace(table(V, dtype), round_split=2))
    rng = np.random.default_rng(29)
    V = 1000
    x = np.concatenate([generators.quantised(generators.gaussian_logits(2, V, 2.0, rng), 2),
                        generators.zipf_logits(1, V, 1.1, rng)])
    for p in (0.9, 0.99):
        stats = torch.zeros((x.shape[0], ops.STATS_WIDTH), dtype=torch.int32, device=DEVICE)
        run_and_check(x, "float32", None, p, stats=stats)
        assert (stats[:2, 4].cpu().numpy() > 0).all(), stats[:, 4]  # the tied rows took rounds


def test_wide_rounds_listed_split_follows_the_batch(monkeypatch):
    """At a batch whose missed rows are listed (B > ``wide_list``), the rounds may split each
    segment over more programs (``round_split_listed``, the launch table's ``roundlisted``):
    with fixed-point masses no sum depends on the split, so each row's mask and boundary are the
    same alone (one program per segment) and in the batch, and both are the oracle's. A tiny
    band makes most rows miss it, and every round runs (``wide_fit`` -1)."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module
    from qrita.backends.triton import wide

    table = _small_slots_table()
    monkeypatch.setattr(launch_module, "pipeline_config",
                        lambda V, dtype: replace(table(V, dtype), band_percent=1, wide_fit=-1,
                                                 wide_fixed=True, round_split=1,
                                                 round_split_listed=2))
    cfg = launch_module.pipeline_config(1000, torch.float32)
    assert cfg.wide_list == 2 and cfg.nseg > 1, cfg
    launches = _site_launches(monkeypatch, wide.wide_round_kernel)
    rng = np.random.default_rng(53)
    V = 1000
    x = _wide_rows(rng, V)
    rows_in_rounds = 0
    for dtype in ("float32", "bfloat16"):
        for p in (0.9, 0.99):
            launches.clear()
            stats = torch.zeros((x.shape[0], ops.STATS_WIDTH), dtype=torch.int32, device=DEVICE)
            batch = _host(run_and_check(x, dtype, None, p, stats=stats))
            in_rounds = stats[:, 4].cpu().numpy() > 0
            assert in_rounds.any(), stats[:, 4]
            rows_in_rounds += int(in_rounds.sum())
            parts = {grid[1] for _, grid, _ in launches}
            assert parts == {2 * cfg.nseg}, parts  # the listed batch's split
            for row in range(x.shape[0]):
                launches.clear()
                alone = torch.zeros((1, ops.STATS_WIDTH), dtype=torch.int32, device=DEVICE)
                mask = _host(run_and_check(x[row:row + 1], dtype, None, p, stats=alone))
                np.testing.assert_array_equal(mask[0].view(np.uint32), batch[row].view(np.uint32),
                                              err_msg=f"{dtype} {p} {row}")
                np.testing.assert_array_equal(alone.cpu().numpy()[0, :3],
                                              stats.cpu().numpy()[row, :3])
                assert {grid[1] for _, grid, _ in launches} <= {cfg.nseg}, launches
    assert rows_in_rounds >= 6, rows_in_rounds


def test_wide_round_atomic_totals_are_the_parts(monkeypatch):
    """With fixed-point masses the rounds may add their partials into per-row totals by integer
    atomics (``round_atomic``, the launch table's ``roundatomic``) instead of storing them per
    segment and part: the totals are the same integers as the per-part merge, so every row's
    mask, boundary and rounds are the same both ways (and the oracle's), unlisted (the rounds'
    merge by the last program, then by launches of their own) and listed, over one and two
    programs per segment. A tiny band makes most rows miss it, and every round runs."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module
    from qrita.backends.triton import wide

    table = _small_slots_table()
    settings = {}
    monkeypatch.setattr(launch_module, "pipeline_config",
                        lambda V, dtype: replace(table(V, dtype), band_percent=1, wide_fit=-1,
                                                 wide_fixed=True, round_split_listed=0,
                                                 **settings))
    launches = _site_launches(monkeypatch, wide.wide_round_kernel, wide.wide_narrow_kernel)
    rng = np.random.default_rng(59)
    V = 1000
    x = _wide_rows(rng, V)
    rows_in_rounds = 0
    for rows in (x[:2], x):  # two rows: unlisted (wide_list 2); five: listed
        for merge, split in ((True, 1), (False, 2)):
            for dtype, p in (("float32", 0.9), ("bfloat16", 0.99)):
                answers = []
                for atomic in (False, True):
                    settings.update(round_merge=merge, round_split=split, round_atomic=atomic)
                    launches.clear()
                    stats = torch.zeros((rows.shape[0], ops.STATS_WIDTH), dtype=torch.int32,
                                        device=DEVICE)
                    mask = _host(run_and_check(rows, dtype, None, p, stats=stats))
                    assert launches and all(kw["ATOMIC"] is atomic for _, _, kw in launches)
                    answers.append((mask.view(np.uint32), stats.cpu().numpy()))
                (mask0, stats0), (mask1, stats1) = answers
                where = f"{rows.shape[0]} rows, merge {merge}, split {split}, {dtype} {p}"
                np.testing.assert_array_equal(mask1, mask0, err_msg=where)
                np.testing.assert_array_equal(stats1, stats0, err_msg=where)
                rows_in_rounds += int((stats0[:, 4] > 0).sum())
    assert rows_in_rounds >= 8, rows_in_rounds


def test_wide_rounds_stop_once_the_interval_fits(monkeypatch):
    """A row the band missed stops narrowing once its interval holds at most ``wide_fit``
    entries (the compaction after the rounds takes them): with the stop rule it takes fewer
    rounds than with every round run (``wide_fit`` -1, the old rule) on some row, never more,
    and both give the oracle's masks. A tiny band makes most smooth rows miss it."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module

    table = _small_slots_table()
    rng = np.random.default_rng(31)
    V = 1000
    x = _wide_rows(rng, V)
    rounds = {}
    for fit in (-1, None):
        def config(V, dtype, fit=fit):
            cfg = replace(table(V, dtype), band_percent=1)
            return cfg if fit is None else replace(cfg, wide_fit=fit)

        monkeypatch.setattr(launch_module, "pipeline_config", config)
        assert fit is not None or config(V, torch.float32).wide_fit > 0
        for p in (0.9, 0.99):
            stats = torch.zeros((x.shape[0], ops.STATS_WIDTH), dtype=torch.int32, device=DEVICE)
            run_and_check(x, "float32", None, p, stats=stats)
            assert (stats[:, 0].cpu().numpy() == 4).all(), stats[:, 0]
            rounds[fit, p] = stats[:, 4].cpu().numpy()
    for p in (0.9, 0.99):
        assert (rounds[-1, p] > 0).sum() >= 3, rounds[-1, p]  # rows that missed the band
        assert (rounds[None, p] <= rounds[-1, p]).all(), (rounds[None, p], rounds[-1, p])
    assert any((rounds[None, p] < rounds[-1, p]).any() for p in (0.9, 0.99)), rounds


def test_wide_rounds_merged_by_their_last_program(monkeypatch):
    """The 16-way rounds' merge and narrowing done by each row's last round program to arrive
    (``round_merge``, the launch table's ``roundmerge``) instead of narrow launches, at batches
    whose rows are not listed (B <= ``wide_list``): no narrow launch there, narrow launches for
    listed rows; every row's statistics (mode, T, budget, rounds, interval, counts) the same
    integers as with the launches, and the oracle's masks. A tiny band makes most rows miss it;
    each segment over two programs; a batch listed (more rows than programs) and one not."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module
    from qrita.backends.triton import wide

    table = _small_slots_table()
    rng = np.random.default_rng(37)
    V = 1000
    x = _wide_rows(rng, V)
    stats = {}
    for merge in (False, True):
        monkeypatch.setattr(launch_module, "pipeline_config",
                            lambda V, dtype, merge=merge: replace(
                                table(V, dtype), band_percent=1, round_split=2, wide_list=2,
                                round_merge=merge))
        narrow = _site_launches(monkeypatch, wide.wide_narrow_kernel)
        for rows in (x, x[:2]):
            for p in (0.9, 0.99):
                out = torch.zeros((rows.shape[0], ops.STATS_WIDTH), dtype=torch.int32,
                                  device=DEVICE)
                launched = len(narrow)
                run_and_check(rows, "float32", None, p, stats=out)
                stats[merge, rows.shape[0], p] = out.cpu().numpy()
                listed = rows.shape[0] > 2
                assert (len(narrow) == launched) == (merge and not listed), (merge, rows.shape)
    for rows in (x.shape[0], 2):
        for p in (0.9, 0.99):
            assert (stats[True, rows, p][:, 4] > 0).sum() >= (3 if rows > 2 else 1), stats[True, rows, p]
            np.testing.assert_array_equal(stats[True, rows, p], stats[False, rows, p])


def test_wide_rounds_with_pivot_rows(monkeypatch):
    """The 16-way rounds' accumulators as (16 pivots, tile) (``round_pivot_rows``, the launch
    table's ``roundrows``) give the oracle's masks and every row's statistics (mode, T, budget,
    rounds, interval, counts) as the (tile, 16) form's, merged by the last program (a batch of
    2) and by narrow launches over listed rows (6 rows); a tiny band makes most rows take the
    rounds; a row of consecutive keys, where pivots land on keys; bfloat16 rows too."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module
    from qrita.backends.triton import wide

    table = _small_slots_table()
    rounds = _site_launches(monkeypatch, wide.wide_round_kernel)
    rng = np.random.default_rng(43)
    V = 999
    consecutive = rng.permutation((np.int32(0x3F800000) + np.arange(V, dtype=np.int32))
                                  .view(np.float32))
    x = np.concatenate([_wide_rows(rng, V), consecutive[None, :]])
    stats = {}
    for pivot_rows in (False, True):
        monkeypatch.setattr(launch_module, "pipeline_config",
                            lambda V, dtype, pivot_rows=pivot_rows: replace(
                                table(V, dtype), band_percent=1, wide_list=2,
                                round_pivot_rows=pivot_rows))
        for rows, dtype in ((x, "float32"), (x[:2], "float32"), (x, "bfloat16")):
            out = torch.zeros((rows.shape[0], ops.STATS_WIDTH), dtype=torch.int32, device=DEVICE)
            run_and_check(rows, dtype, None, 0.95, stats=out)
            stats[pivot_rows, rows.shape[0], dtype] = out.cpu().numpy()
        assert any(kwargs.get("PIVOT_ROWS") is pivot_rows for _, _, kwargs in rounds), rounds
    for key in ((6, "float32"), (2, "float32"), (6, "bfloat16")):
        assert (stats[(True, *key)][:, 4] > 0).any(), stats[(True, *key)]
        np.testing.assert_array_equal(stats[(True, *key)], stats[(False, *key)])


def test_mask_write_cut_segments(monkeypatch):
    """The mask write of wide rows with ``write_cut`` (the launch table's ``writecut``): a
    segment whose copies of T are all kept, or none, keeps the entries at or above one key
    without ranking them; only the segment where the tie budget ends ranks. The masks are the
    oracle's and bit for bit the ranked write's, on rows whose T has one copy, rows whose T
    has hundreds of copies across every segment with part of them kept (quantised rows,
    float32 and bfloat16), and a row whose budget ends one short of a segment's copies; in and
    out of place."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module
    from qrita.backends.triton import pipeline

    table = _small_slots_table()
    writes = _site_launches(monkeypatch, pipeline.write_mask_kernel)
    rng = np.random.default_rng(47)
    V = 1003
    # 300 entries at 0 and four copies of T = -1 (segments of 256: one in the first, two in
    # the second, one in the third), the rest at -30; at p = 0.99695 the budget is 2, so it
    # ends inside the second segment, one short of its copies (weights 1, e^-1, e^-30)
    edge = np.full(V, -30.0, dtype=np.float32)
    copies_at = [10, 300, 400, 600]
    edge[rng.choice(np.setdiff1d(np.arange(V), copies_at), 300, replace=False)] = 0.0
    edge[copies_at] = -1.0
    x = np.concatenate([_wide_rows(rng, V),
                        generators.quantised(generators.gaussian_logits(2, V, 2.0, rng), 3),
                        edge[None, :]])
    masks = {}
    for cut in (False, True):
        monkeypatch.setattr(launch_module, "pipeline_config",
                            lambda V, dtype, cut=cut: replace(table(V, dtype), write_cut=cut))
        for dtype in ("float32", "bfloat16"):
            for p in (0.9, 0.99695):
                for inplace in (False, True):
                    out = run_and_check(x, dtype, None, p, inplace=inplace)
                    masks[cut, dtype, p, inplace] = _host(out)
        assert any(kwargs.get("CUT") is cut for _, _, kwargs in writes), writes
    partial = 0
    for (cut, dtype, p, inplace), mask in masks.items():
        if cut:
            np.testing.assert_array_equal(mask.view(np.int32),
                                          masks[False, dtype, p, inplace].view(np.int32))
            values = _host(_to_device(x, dtype))
            kept = mask != -np.inf
            for b in range(x.shape[0]):
                t_value = values[b][kept[b]].min()
                copies = values[b] == t_value
                partial += 0 < (kept[b] & copies).sum() < copies.sum()
    assert partial > 0  # some row keeps part of its copies of T (a ranked segment)


@pytest.mark.parametrize("ahead", [(2, 3), (4, 2), (3, 4)])
def test_tiles_in_flight_change_nothing(monkeypatch, ahead):
    """Tiles in flight per program in pass A and the wide stage's streams (``ahead``, the launch
    table's ``ahead`` / ``aheadsmall``: 1-4) change which loads are pending, never which tile a
    lane sums: the masks are the oracle's and every row's statistics are the same integers as
    with one tile in flight, on rows that take the band, miss it (the rounds) and fit the
    candidates; top-k and top-k + top-p too. Segments of 8 tiles (32-entry tiles), and a last
    tile past V."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module

    table = _small_slots_table()
    rng = np.random.default_rng(41)
    V = 1501
    x = _wide_rows(rng, V)
    stats = {}
    for depth in ((1, 1), ahead):
        monkeypatch.setattr(launch_module, "pipeline_config",
                            lambda V, dtype, depth=depth: replace(
                                table(V, dtype), band_percent=5, ahead=depth,
                                ahead_small=depth, block_cand=32, block_wide=32,
                                block_wide2=32, block_round=32))
        for k, p in ((None, 0.9), (None, 0.99), (20, None), (30, 0.8)):
            out = torch.zeros((x.shape[0], ops.STATS_WIDTH), dtype=torch.int32, device=DEVICE)
            run_and_check(x, "float32", k, p, stats=out)
            stats[depth, k, p] = out.cpu().numpy()
    for k, p in ((None, 0.9), (None, 0.99), (20, None), (30, 0.8)):
        np.testing.assert_array_equal(stats[ahead, k, p], stats[(1, 1), k, p])
    assert (stats[(1, 1), None, 0.9][:, 4] > 0).any()  # some row ran the rounds


@pytest.mark.parametrize("sparse_wide,flat", [(0, False), (64, False), (0, True)])
def test_wide_compaction_append_modes_are_exact(monkeypatch, sparse_wide, flat):
    """The wide compaction's ways of appending a tile (one by one, or a prefix sum: which one a
    tile takes depends on the launch table's ``sparse_wide``; the prefix sum by one scan per
    32-entry row or by one packed scan per tile, ``wide_packed``) give the oracle's masks, with
    its lanes as laid out by default or ``flat`` (``wide_flat``, ``wideflat``); the packed scan
    gives every row the same statistics (the same slots)."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module
    from qrita.backends.triton import wide

    table = _small_slots_table()
    launches = _site_launches(monkeypatch, wide.wide_compact_kernel)
    rng = np.random.default_rng(19)
    V = 1000
    x = np.concatenate([generators.zipf_logits(2, V, 1.1, rng),
                        generators.quantised(generators.gaussian_logits(2, V, 2.0, rng), 2)])
    stats = {}
    for packed in (False, True):
        monkeypatch.setattr(launch_module, "pipeline_config",
                            lambda V, dtype, packed=packed: replace(
                                table(V, dtype), sparse_wide=sparse_wide, wide_flat=flat,
                                wide_packed=packed))
        for p in (0.9, 0.99):
            out = torch.zeros((x.shape[0], ops.STATS_WIDTH), dtype=torch.int32, device=DEVICE)
            run_and_check(x, "float32", None, p, stats=out)
            stats[packed, p] = out.cpu().numpy()
        # (packed with FLAT lanes only)
        assert any(kwargs.get("FLAT") == flat and kwargs.get("PACKED") == (packed and flat)
                   for _, _, kwargs in launches), launches
    for p in (0.9, 0.99):
        np.testing.assert_array_equal(stats[True, p], stats[False, p])


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_wide_compaction_lean_tests_change_nothing(monkeypatch, dtype):
    """The wide compaction's interval tests by float compares (``wide_lean``, the launch table's
    ``widelean``: no order key per entry, tiles padded with NaN past V) take the same entries
    with the same weights: every row's statistics are the same integers as with the key
    compares, and the masks are the oracle's, on rows at the keys' edges: NaN and -inf entries
    (intervals open down to NaN's key), a +inf row, signed zeros and subnormals, heavy ties;
    bands that finish and bands that miss (the rounds, then the compaction after them); 32-entry
    tiles, the last one past V; bfloat16 rows through the keyed band (counted per value)."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module
    from qrita.backends.triton import wide

    table = _small_slots_table()
    launches = _site_launches(monkeypatch, wide.wide_compact_kernel)
    V = 1001
    x = _wide_edge_rows(np.random.default_rng(23), V, grammar_fracs=(0.6, 0.5))
    stats = {}
    for lean in (False, True):
        monkeypatch.setattr(launch_module, "pipeline_config",
                            lambda V, dtype, lean=lean: replace(
                                table(V, dtype), band_percent=5, wide_lean=lean, block_wide=32,
                                block_wide2=32))
        for p in (0.9, 0.99, 0.999999):
            out = torch.zeros((x.shape[0], ops.STATS_WIDTH), dtype=torch.int32, device=DEVICE)
            run_and_check(x, dtype, None, p, stats=out)
            stats[lean, p] = out.cpu().numpy()
        assert any(kwargs.get("LEAN") is lean for _, _, kwargs in launches), launches
        if dtype == "bfloat16":
            assert any(kwargs.get("KEY_SHIFT") == 16 for _, _, kwargs in launches), launches
    for p in (0.9, 0.99, 0.999999):
        np.testing.assert_array_equal(stats[True, p], stats[False, p])
    taken = np.concatenate([stats[True, p] for p in (0.9, 0.99, 0.999999)])
    assert (taken[:, 13] == 1).any() and (taken[:, 4] > 0).any()  # band hits, then rounds



@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_wide_compaction_unswitched_and_exp2(monkeypatch, dtype):
    """The wide compaction's loop without NaN terms for rows whose interval and band reach no
    NaN key (``wide_unswitch``, the launch table's ``wideunswitch``) and its band weights by
    exp2 (``wide_exp2``, ``wideexp2``) give the oracle's masks on rows with NaN, -inf and +inf
    entries, extremes and heavy ties, bands that finish and bands that miss; without NaN terms
    every row's statistics are the same integers, and with exp2 too on these rows."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module
    from qrita.backends.triton import wide

    table = _small_slots_table()
    launches = _site_launches(monkeypatch, wide.wide_compact_kernel)
    V = 1001
    x = _wide_edge_rows(np.random.default_rng(37), V, grammar_fracs=(0.5,))
    stats = {}
    # (unswitch, exp2, fixed): exp2 is the float32 masses' option; the fixed-point masses (the
    # GPU default, ``widefixed``) with and without the unswitched loop
    for unswitch, exp2, fixed in ((False, False, False), (True, False, False),
                                  (True, True, False), (False, False, True),
                                  (True, False, True)):
        monkeypatch.setattr(launch_module, "pipeline_config",
                            lambda V, dtype, u=unswitch, e=exp2, f=fixed: replace(
                                table(V, dtype), band_percent=5, wide_lean=True, block_wide=32,
                                block_wide2=32, wide_unswitch=u, wide_exp2=e, wide_fixed=f))
        for p in (0.9, 0.99, 0.999999):
            out = torch.zeros((x.shape[0], ops.STATS_WIDTH), dtype=torch.int32, device=DEVICE)
            run_and_check(x, dtype, None, p, stats=out)
            stats[unswitch, exp2, fixed, p] = out.cpu().numpy()
        assert any(kwargs.get("UNSWITCH") is unswitch and kwargs.get("EXP2") is exp2
                   and kwargs.get("FIXED", False) is fixed
                   for _, _, kwargs in launches), launches
    for p in (0.9, 0.99, 0.999999):
        np.testing.assert_array_equal(stats[True, False, False, p], stats[False, False, False, p])
        np.testing.assert_array_equal(stats[True, True, False, p], stats[False, False, False, p])
        np.testing.assert_array_equal(stats[True, False, True, p], stats[False, False, True, p])
    for exp2, fixed in ((True, False), (False, True)):
        taken = np.concatenate([stats[True, exp2, fixed, p] for p in (0.9, 0.99, 0.999999)])
        assert (taken[:, 13] == 1).any() and (taken[:, 4] > 0).any()  # band hits, then rounds

@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_wide_compaction_paired_tiles(monkeypatch, dtype):
    """The wide compaction taking two tiles a turn in their own load slots (``wide_paired``,
    the launch table's ``widepaired``): the oracle's masks on rows with NaN, -inf and +inf
    entries, extremes and heavy ties, bands that finish and bands that miss, and every row's
    statistics the same integers as the one-tile ring's, with the float compares (``lean``)
    and with order keys."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module
    from qrita.backends.triton import wide

    table = _small_slots_table()
    launches = _site_launches(monkeypatch, wide.wide_compact_kernel)
    V = 1001
    x = _wide_edge_rows(np.random.default_rng(41), V, grammar_fracs=(0.5,))
    stats = {}
    for paired, lean in ((False, True), (True, True), (False, False), (True, False)):
        monkeypatch.setattr(launch_module, "pipeline_config",
                            lambda V, dtype, w=paired, n=lean: replace(
                                table(V, dtype), band_percent=5, wide_lean=n, block_wide=32,
                                block_wide2=32, wide_paired=w))
        assert launch_module.pipeline_config(V, torch.float32).seg_len % 64 == 0
        for p in (0.9, 0.99, 0.999999):
            out = torch.zeros((x.shape[0], ops.STATS_WIDTH), dtype=torch.int32, device=DEVICE)
            run_and_check(x, dtype, None, p, stats=out)
            stats[paired, lean, p] = out.cpu().numpy()
        assert any(kwargs.get("PAIRED") is paired and kwargs.get("LEAN") is lean
                   for _, _, kwargs in launches), launches
    for lean in (True, False):
        for p in (0.9, 0.99, 0.999999):
            np.testing.assert_array_equal(stats[True, lean, p], stats[False, lean, p])
    taken = np.concatenate([stats[True, True, p] for p in (0.9, 0.99, 0.999999)])
    assert (taken[:, 13] == 1).any() and (taken[:, 4] > 0).any()  # band hits, then rounds


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_wide_fixed_masses_answer_does_not_depend_on_the_band(monkeypatch, dtype):
    """The wide stage's masses in fixed point (``wide_fixed``, the launch table's
    ``widefixed``): the oracle's masks, and every row's boundary key and tie budget the same
    whichever band the stage starts from: sampled small (most rows miss it and take the
    rounds), sampled large, from a count histogram, and for bfloat16 the band counted per value
    (keyed) or compacted; on rows with NaN, -inf and +inf, extremes and heavy ties, p at
    0.9, 0.99 and 1 - 1e-6. (With float32 masses the band decides how the masses are grouped,
    so a row near a cumulative boundary could end on another key.) Rows whose σ-cutoff sample
    misleads (:func:`_sample_misled_rows`) go wide from below pass A's candidates at p = 0.5
    and 0.9 (their float32 mass is no fixed-point sum: the stage starts from the row's top).
    """
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module
    from qrita.backends.triton import wide

    table = _small_slots_table()
    launches = _site_launches(monkeypatch, wide.wide_compact_kernel, wide.wide_search_kernel)
    V = 1001
    rng = np.random.default_rng(43)
    x = np.concatenate([_wide_edge_rows(rng, V, grammar_fracs=(0.5,)),
                        generators.zipf_logits(2, V, 1.1, rng),
                        _sample_misled_rows(rng, V, table(V, torch.float32).sample)])
    bands = {"small": dict(band_percent=5), "large": dict(band_percent=75),
             "hist": dict(band_percent=75, hist_bins=256)}
    if dtype == "bfloat16":
        bands["unkeyed"] = dict(band_percent=75, key_shift=0)
    answers = {}
    for name, change in bands.items():
        monkeypatch.setattr(launch_module, "pipeline_config",
                            lambda V, dtype, c=change: replace(
                                table(V, dtype), wide_lean=True, block_wide=32, block_wide2=32,
                                wide_unswitch=True, wide_fixed=True, **c))
        for p in (0.5, 0.9, 0.99, 1 - 1e-6):
            out = torch.zeros((x.shape[0], ops.STATS_WIDTH), dtype=torch.int32, device=DEVICE)
            run_and_check(x, dtype, None, p, stats=out)
            answers[name, p] = out.cpu().numpy()
    assert launches and all(kwargs.get("FIXED") is True for _, _, kwargs in launches)
    for p in (0.5, 0.9, 0.99, 1 - 1e-6):
        for name in bands:  # boundary key and tie budget (mode 2 or 4: either path)
            np.testing.assert_array_equal(answers[name, p][:, 1:3], answers["small", p][:, 1:3],
                                          err_msg=f"{name} p={p}")
    taken = np.concatenate([answers[name, p] for name in bands for p in (0.9, 0.99)])
    assert (taken[:, 13] == 1).any() and (taken[:, 4] > 0).any()  # band hits, then rounds
    # every wide row (mode 2 or 4) starts from the row's top with nothing above it (columns
    # 10, 12: pass A's interval), the misled rows too, whose candidates' float32 mass pass A
    # proved short of p = 0.5 (else their interval would end at the cutoff)
    from qrita.reference.keys import order_key

    finite_max = np.where(np.isnan(x), -np.inf, generators.to_dtype(x, dtype)).max(axis=1)
    top_key = order_key(finite_max.astype(np.float32)).astype(np.int64)
    for (name, p), stats in answers.items():
        wide_rows = np.isin(stats[:, 0], (2, 4))
        assert wide_rows[-3:].all(), (name, p)
        np.testing.assert_array_equal(stats[wide_rows, 10], top_key[wide_rows])
        np.testing.assert_array_equal(stats[wide_rows, 12], 0)


def test_wide_fixed_band_may_follow_the_batch(monkeypatch):
    """With fixed-point masses the band's placement may follow B (``hist_small_batch``, the
    launch table's ``histsmall``): a row alone (B = 1: the band from the one-launch count
    histogram) gets the same mask, boundary key and tie budget as in a batch of four (the band
    from the sample), and both are the oracle's; zipf, Gaussian and misled-sample rows, p at
    0.5, 0.9 and 0.99, float32 and bfloat16."""
    from dataclasses import replace

    from qrita.backends.triton import hist_band, wide
    from qrita.backends.triton import launch as launch_module

    table = _small_slots_table()
    # at B <= 2 also another compaction tile (``widesmall``), each segment's rounds split
    # over two programs (``roundsmall``; one at B = 4) and its count histogram over two
    # (``histsplit``)
    monkeypatch.setattr(launch_module, "pipeline_config",
                        lambda V, dtype: replace(table(V, dtype), wide_fixed=True,
                                                 hist_small_batch=2, block_wide_small=64,
                                                 round_split_small=2, hist_split=2))
    assert table(1001, torch.float32).round_split == 1
    monkeypatch.setenv("QRITA_ONE_LAUNCH_SCRATCH", "keep")
    monkeypatch.setattr(launch_module, "_KEPT_HIST", {})
    monkeypatch.setattr(launch_module, "_KEPT_HIST_VIEWS", {})
    launches = _site_launches(monkeypatch, hist_band.hist_band_count_kernel,
                              wide.wide_band_kernel, wide.wide_compact_kernel,
                              wide.wide_round_kernel)
    hist_spans = []  # programs x entries per program of each count histogram launch
    recorded_site = launch_module.launch_site

    def spans_site(site, kernel, grid, *args, **kwargs):
        if kernel is hist_band.hist_band_count_kernel:
            hist_spans.append(grid[1] * args[5])
        recorded_site(site, kernel, grid, *args, **kwargs)

    monkeypatch.setattr(launch_module, "launch_site", spans_site)
    rng = np.random.default_rng(47)
    V = 1001
    x = np.concatenate([generators.zipf_logits(1, V, 1.1, rng),
                        generators.gaussian_logits(1, V, 2.0, rng),
                        _sample_misled_rows(rng, V, table(V, torch.float32).sample, (2.5, 3.0))])
    for dtype in ("float32", "bfloat16"):
        for p in (0.5, 0.9, 0.99):
            stats = torch.zeros((x.shape[0], ops.STATS_WIDTH), dtype=torch.int32, device=DEVICE)
            batch = _host(run_and_check(x, dtype, None, p, stats=stats))
            for row in range(x.shape[0]):
                alone = torch.zeros((1, ops.STATS_WIDTH), dtype=torch.int32, device=DEVICE)
                mask = _host(run_and_check(x[row:row + 1], dtype, None, p, stats=alone))
                np.testing.assert_array_equal(mask[0].view(np.uint32), batch[row].view(np.uint32),
                                              err_msg=f"{dtype} {p} {row}")  # (bf16 widened)
                np.testing.assert_array_equal(alone.cpu().numpy()[0, :3],
                                              stats.cpu().numpy()[row, :3])
    names = [kernel.fn.__name__ for kernel, _, _ in launches]
    assert "hist_band_count_kernel" in names and "wide_band_kernel" in names, set(names)
    # the small batches' settings were launched, and the usual ones at B = 4
    tiles = {kwargs["BLOCK"] for kernel, _, kwargs in launches
             if kernel.fn.__name__ == "wide_compact_kernel" and kwargs["BAND"]}
    assert tiles == {64, table(V, torch.float32).block_wide}, tiles
    round_grids = {grid[1] for kernel, grid, _ in launches
                   if kernel.fn.__name__ == "wide_round_kernel"}
    nseg = table(V, torch.float32).nseg
    assert round_grids == {nseg, 2 * nseg}, round_grids
    hist_grids = {grid[1] for kernel, grid, _ in launches
                  if kernel.fn.__name__ == "hist_band_count_kernel"}
    assert hist_grids == {2 * nseg}, hist_grids
    seg_len = table(V, torch.float32).seg_len
    assert set(hist_spans) == {nseg * seg_len}, hist_spans  # the row covered once


def test_pass_a_append_limit_for_large_k_calls(monkeypatch):
    """Pass A's one-by-one append limit may differ for calls with the top-k retry (a large or a
    per-row k: the launch table's ``sparselarge``): the masks and top_k's selections are the
    oracle's either way, and only those calls take it (k below ``retry_min_k`` keeps
    ``sparse``)."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module
    from qrita.reference import oracle

    table = launch_module.pipeline_config
    usual = table(1000, torch.float32)
    large_limit = 0 if usual.sparse > 0 else 4
    monkeypatch.setattr(launch_module, "pipeline_config",
                        lambda V, dtype: replace(table(V, dtype), sparse_large=large_limit))
    monkeypatch.setenv("QRITA_ONE_LAUNCH", "0")
    launches = _site_launches(monkeypatch, launch_module.candidates_kernel)
    rng = np.random.default_rng(23)
    V = 1000
    x = np.concatenate([batch for _, batch in generators._family_batches(V, rng)])[:12]
    small_k = usual.retry_min_k - 1
    large_k = usual.retry_min_k + 40
    assert small_k >= 1
    for k, p in [(small_k, None), (large_k, None), (large_k, 0.9),
                 (np.arange(1, 13, dtype=np.int64) * 7, None)]:
        launches.clear()
        run_and_check(x, "float32", k, p)
        want = large_limit if (isinstance(k, np.ndarray) or k >= usual.retry_min_k) else usual.sparse
        assert launches and {kw["SPARSE"] for _, _, kw in launches} == {want}, (k, p)
    values, indices = ops.top_k(_to_device(x, "float32"), large_k)
    want = oracle.top_k(x, large_k)
    np.testing.assert_array_equal(_host(indices), want.indices)
    np.testing.assert_array_equal(_host(values), want.values)


def test_empty_batch(monkeypatch):
    """B = 0: empty results of the right shape and dtype, with and without row chunks."""
    for rows in ("0", "2"):
        monkeypatch.setenv("QRITA_CHUNK_ROWS", rows)
        x = torch.empty((0, 300), dtype=torch.float32, device=DEVICE)
        out = ops.top_k_top_p_mask(x, 5, 0.9)
        assert out.shape == (0, 300) and out.dtype == torch.float32
        vals, idx = ops.top_k(x, 5)
        assert vals.shape == idx.shape == (0, 5) and idx.dtype == torch.int64


def test_row_chunks_give_the_same_masks(monkeypatch, count_calls):
    """QRITA_CHUNK_ROWS=2: a batch of 5 rows runs as three pipeline passes (counted) with the
    same masks as the oracle, for scalar and per-row k / p, in place and out of place."""
    from qrita.backends.triton import launch as launch_module

    monkeypatch.setenv("QRITA_CHUNK_ROWS", "2")
    monkeypatch.setenv("QRITA_ONE_LAUNCH", "0")
    passes = count_calls(ops, "launch_mask")
    rng = np.random.default_rng(37)
    x = generators.zipf_logits(5, 301, 1.1, rng)
    x[2] = generators.quantised(x[2:3], 2)[0]  # ties at the boundary
    for k, p in [(7, None), (None, 0.8), (np.array([1, 5, 300, 0, 9]), np.array([0.5, 0.9, 1.0,
                                                                                    0.0, 0.3]))]:
        run_and_check(x, "float32", k, p)
    run_and_check(x, "bfloat16", 9, 0.7, inplace=True)
    assert len(passes) == 4 * 3
    assert launch_module.chunk_rows(5) == 2


ONE_LAUNCH_FAMILIES = ["zipf", "quantised2", "all_equal", "grammar", "nan", "all_nan", "posinf",
                      "inf_nan_mix", "tied_boundary", "five_zeros", "extremes"]


@pytest.mark.parametrize("dtype", list(TORCH_DTYPES))
def test_one_launch_topk_mask_is_exact(monkeypatch, count_calls, dtype):
    """QRITA_ONE_LAUNCH=1: small top-k batches take the one-launch kernel (checked) and give the
    oracle's masks on the edge families, per-row k, k = V - 1 / V, and rows whose candidates
    overflow (the full-row fallback inside the same launch)."""
    from qrita.backends.triton import launch as launch_module

    monkeypatch.setenv("QRITA_ONE_LAUNCH", "1")
    taken = count_calls(launch_module, "_launch_topk_mask_one")
    rng = np.random.default_rng(23)
    V = 1023
    families = dict(generators._family_batches(V, rng))
    failures = []
    for name in ONE_LAUNCH_FAMILIES:
        x = generators.to_dtype(families[name], dtype)
        ks = [1, 50, V - 1, V, rng.integers(0, V + 1, size=x.shape[0]).astype(np.int64)]
        for k in ks:
            try:
                run_and_check(x, dtype, k, None)
            except AssertionError as err:
                failures.append(f"{name}/k={k}: {err}")
    wide = generators.zipf_logits(2, 4097, 1.1, rng)
    for k in (3, 700):  # 700 > the interpreter table's 512 slots: the fallback
        run_and_check(generators.to_dtype(wide, dtype), dtype, k, None)
    assert not failures, f"{len(failures)} failing:\n" + "\n".join(failures[:10])
    assert len(taken) == len(ONE_LAUNCH_FAMILIES) * 5 + 2


def test_one_launch_pass_a_whole_segment_tile(monkeypatch):
    """``candone`` / ``sparseone``: the one-launch kernels' pass A may take a tile up to the
    whole segment and append by prefix sums only; the masks and top_k's selections (sorted and
    in index order) are still the oracle's, and the kernels take that tile and limit."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module
    from qrita.reference import oracle

    table = launch_module.pipeline_config
    V = 1001
    usual = table(V, torch.float32)
    whole_segment = usual.seg_len
    assert whole_segment > usual.block_cand_one and usual.sparse > 0
    monkeypatch.setattr(launch_module, "pipeline_config",
                        lambda V, dtype: replace(table(V, dtype), block_cand_one=whole_segment,
                                                 sparse_one=0))
    monkeypatch.setenv("QRITA_ONE_LAUNCH", "1")
    launches = _site_launches(monkeypatch, launch_module.one_launch_topk_mask_kernel,
                              launch_module.one_launch_select_kernel)
    rng = np.random.default_rng(43)
    x = np.concatenate([batch for _, batch in generators._family_batches(V, rng)])[:8]
    for k in (1, 50, V - 1, rng.integers(0, V + 1, size=8).astype(np.int64)):
        run_and_check(x, "float32", k, None)
    for sorted_ in (True, False):
        values, indices = ops.top_k(_to_device(x, "float32"), 20, sorted=sorted_)
        want = oracle.top_k(x, 20, sorted=sorted_)
        np.testing.assert_array_equal(_host(indices), want.indices)
        np.testing.assert_array_equal(_host(values), want.values)
    assert len(launches) == 6
    assert {(kw["BLOCK_CAND"], kw["SPARSE"]) for _, _, kw in launches} == {(whole_segment, 0)}


def test_one_launch_zeroed_scratch(monkeypatch):
    """``QRITA_ONE_LAUNCH_SCRATCH=zero``: every call takes a new zeroed buffer
    (none is kept), and the answers are the oracle's."""
    from qrita.backends.triton import launch as launch_module
    from qrita.reference import oracle

    monkeypatch.setenv("QRITA_ONE_LAUNCH", "1")
    monkeypatch.setenv("QRITA_ONE_LAUNCH_SCRATCH", "zero")
    monkeypatch.setattr(launch_module, "_KEPT_SCRATCH", {})
    monkeypatch.setattr(launch_module, "_KEPT_VIEWS", {})
    rng = np.random.default_rng(48)
    x = generators.zipf_logits(3, 1001, 1.1, rng)
    run_and_check(x, "float32", 40, None)
    values, indices = ops.top_k(_to_device(x, "float32"), 7)
    want = oracle.top_k(x, 7)
    np.testing.assert_array_equal(_host(indices), want.indices)
    np.testing.assert_array_equal(_host(values), want.values)
    assert launch_module._KEPT_SCRATCH == {} and launch_module._KEPT_VIEWS == {}


def test_one_launch_kept_scratch(monkeypatch):
    """``QRITA_ONE_LAUNCH_SCRATCH=keep`` (the default): calls on one stream share one scratch buffer, never
    zeroed again. Every word but the arrival counters is filled with garbage before each call:
    masks and selections are still the oracle's (no other word is read before it is written),
    the counters are zero again after each call, and the buffer is reused (grown when a call
    needs more); each size's view of it is kept too (the last call repeats the first)."""
    from qrita.backends.triton import launch as launch_module
    from qrita.backends.triton.one_launch import COUNTER_WORDS
    from qrita.reference import oracle

    monkeypatch.setenv("QRITA_ONE_LAUNCH", "1")
    monkeypatch.setenv("QRITA_ONE_LAUNCH_SCRATCH", "keep")
    monkeypatch.setattr(launch_module, "_KEPT_SCRATCH", {})
    monkeypatch.setattr(launch_module, "_KEPT_VIEWS", {})
    counters = COUNTER_WORDS.value
    rng = np.random.default_rng(47)
    families = dict(generators._family_batches(1001, rng))
    x_small = np.concatenate([families[name] for name in ("zipf", "tied_boundary", "nan",
                                                          "grammar")])[:8]
    x_wide = generators.zipf_logits(2, 4097, 1.1, rng)
    calls = [("mask", x_small[:3], 50), ("top_k", x_small[:5], 20), ("mask", x_wide, 700),
             ("mask", x_small, rng.integers(0, 1002, size=8).astype(np.int64)),
             ("top_k", x_small, 1000), ("mask", x_small[:1], 1), ("mask", x_small[:3], 50)]
    buffers = []  # (data pointer, words) after each call
    for op, x, k in calls:
        for kept in launch_module._KEPT_SCRATCH.values():
            garbage = torch.from_numpy(rng.integers(-2**31, 2**31 - 1, size=kept.numel(),
                                                    dtype=np.int64).astype(np.int32))
            kept[counters:] = garbage[counters:].to(kept.device)
        if op == "mask":
            run_and_check(x, "float32", k, None)
        else:
            values, indices = ops.top_k(_to_device(x, "float32"), k)
            want = oracle.top_k(x, k)
            np.testing.assert_array_equal(_host(indices), want.indices)
            np.testing.assert_array_equal(_host(values), want.values)
        assert len(launch_module._KEPT_SCRATCH) == 1
        kept = next(iter(launch_module._KEPT_SCRATCH.values()))
        assert not _host(kept[:counters]).any(), (op, k)
        buffers.append((kept.data_ptr(), kept.numel()))
        # the kept views are of this buffer only (those of a replaced one are dropped)
        assert launch_module._KEPT_VIEWS
        assert all(v.data_ptr() == kept.data_ptr() for v in launch_module._KEPT_VIEWS.values())
    # a new buffer exactly when a call needed more words than the last one held
    for (ptr_before, words_before), (ptr, words) in zip(buffers, buffers[1:]):
        assert (ptr != ptr_before) == (words > words_before)
    assert len({ptr for ptr, _ in buffers}) < len(calls)  # some calls reused a buffer


# ------------------------------------------------------------------------------ GPU only
GPU_VOCABS = [32000, 128256, 151936, 201088, 262144]


def _gpu_kp(V):
    return [(1, None), (50, None), (V - 1, None), (None, 1e-9), (None, 0.5), (None, 0.9),
            (None, 1 - 1e-7), (50, 0.9), (1000, 0.95)]


GPU_CELLS = [(V, "float32") for V in GPU_VOCABS] + [(128256, "bfloat16"), (151936, "float16"),
                                                     (262144, "bfloat16")]


@pytest.mark.gpu
@pytest.mark.parametrize("V,dtype", GPU_CELLS)
def test_gpu_real_vocab(V, dtype):
    failures = []
    rng = np.random.default_rng(V)
    for family, batch in generators._family_batches(V, rng):
        x = generators.to_dtype(batch, dtype)
        for k, p in _gpu_kp(V):
            try:
                run_and_check(x, dtype, k, p)
            except AssertionError as err:
                failures.append(f"{family}/V={V}/{dtype}/k={k}/p={p}: {err}")
    assert not failures, f"{len(failures)} failing:\n" + "\n".join(failures[:10])


@pytest.mark.gpu
@pytest.mark.parametrize("B", [1, 3, 64, 128, 1024])
@pytest.mark.parametrize("workload", ["zipf", "gaussian"])
def test_gpu_batches(B, workload):
    rng = np.random.default_rng(B)
    V = 131072
    make = generators.zipf_logits if workload == "zipf" else generators.gaussian_logits
    x = make(B, V, 1.1 if workload == "zipf" else 2.0, rng)
    rows = np.sort(rng.choice(B, size=min(B, 48), replace=False))
    xt = _to_device(x, "float32")
    for k, p in [(50, None), (None, 0.9), (100, 0.9), (1000, None), (None, 0.99)]:
        out = _host(ops.top_k_top_p_mask(xt, k, p))
        compare.assert_mask_matches(out[rows], x[rows], k, p)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("B", [64, 1024])
def test_gpu_batches_16bit(B, dtype):
    """16-bit rows at real batches (their own wide compaction tile and keyed band): full masks
    of up to 48 rows of zipf and Gaussian logits against the oracle on the rounded values."""
    rng = np.random.default_rng(B + 7)
    V = 131072
    x = np.concatenate([generators.zipf_logits(B // 2, V, 1.1, rng),
                        generators.gaussian_logits(B - B // 2, V, 2.0, rng)])
    rows = np.sort(rng.choice(B, size=min(B, 48), replace=False))
    xt = _to_device(x, dtype)
    x_host = _host(xt)
    for k, p in [(50, None), (None, 0.9), (100, 0.9), (1000, None), (None, 0.99)]:
        out = _host(ops.top_k_top_p_mask(xt, k, p))
        compare.assert_mask_matches(out[rows], x_host[rows], k, p)


@pytest.mark.gpu
def test_gpu_top_k_retry_rows_exact():
    """At real shapes, the top-k rows that take the retry (pass A again at a second cutoff) end on
    the candidate path and match the oracle, as masks (top-k, top-k then top-p) and as top_k;
    k = 2000 makes many rows retry (the sample's cutoff is near the slots' limit there)."""
    rng = np.random.default_rng(29)
    B, V = 1024, 131072
    x = generators.zipf_logits(B, V, 1.1, rng)
    x[1::2] = generators.gaussian_logits(B // 2, V, 2.0, rng)
    xt = _to_device(x, "float32")
    retried_any = False
    for k, p in [(2000, None), (1000, None), (1000, 0.9)]:
        stats = torch.zeros((B, ops.STATS_WIDTH), dtype=torch.int32, device=DEVICE)
        out = _host(ops.top_k_top_p_mask(xt, k, p, stats=stats))
        st = _host(stats)
        retried = np.flatnonzero(st[:, 14] == 1)
        retried_any |= retried.size > 0
        # the second cutoff suffices for nearly every retried row (the rest fall back, exactly)
        assert (st[retried, 0] == 1).sum() >= 0.9 * retried.size, st[retried, 0]
        rows = np.union1d(retried[:64], np.arange(0, B, 97))
        compare.assert_mask_matches(out[rows], x[rows], k, p)
        if p is None:
            vals, idx = ops.top_k(xt, k)
            compare.assert_topk_matches(_host(vals)[rows], _host(idx)[rows], x[rows], k)
    assert retried_any, "k = 2000 must retry some rows"


@pytest.mark.gpu
def test_gpu_deterministic_and_batch_invariant():
    rng = np.random.default_rng(11)
    V = 151936
    big = generators.zipf_logits(1024, V, 1.1, rng)
    big[::7] = generators.gaussian_logits(len(big[::7]), V, 2.0, rng)
    xt = _to_device(big, "float32")
    for k, p in [(50, None), (None, 0.9), (100, 0.9)]:
        first = ops.top_k_top_p_mask(xt, k, p)
        for _ in range(9):
            again = ops.top_k_top_p_mask(xt, k, p)
            assert torch.equal(first.view(torch.int32), again.view(torch.int32))
        for row in [0, 7, 500, 1023]:
            alone = ops.top_k_top_p_mask(xt[row:row + 1].clone(), k, p)
            assert torch.equal(alone[0].view(torch.int32), first[row].view(torch.int32))
            # 64 and 128 rows: the mid-batch pass A tile (``candmid``) for top-k alone
            for rows_in, at in ((64, 17), (128, 100)):
                batch = xt[:rows_in].clone()
                batch[at] = xt[row]
                in_batch = ops.top_k_top_p_mask(batch, k, p)
                assert torch.equal(in_batch[at].view(torch.int32), first[row].view(torch.int32))


@pytest.mark.gpu
def test_gpu_cuda_graph_capture_and_replay():
    rng = np.random.default_rng(12)
    V = 128256
    x = _to_device(generators.zipf_logits(64, V, 1.1, rng), "float32")
    k = torch.full((64,), 50, dtype=torch.int64, device="cuda")
    p = torch.full((64,), 0.9, dtype=torch.float32, device="cuda")
    ops.top_k_top_p_mask(x, k, p)  # compile outside the capture
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        out = ops.top_k_top_p_mask(x, k, p)
    torch.cuda.current_stream().wait_stream(stream)
    fresh = generators.gaussian_logits(64, V, 2.0, rng)
    x.copy_(torch.from_numpy(fresh))
    k.fill_(20)
    graph.replay()
    torch.cuda.synchronize()
    compare.assert_mask_matches(_host(out), fresh, 20, 0.9)


@pytest.mark.gpu
@pytest.mark.parametrize("B", [1, 8])
def test_gpu_small_batch_top_k_in_a_graph(B):
    """Top-k (alone, and with top-p under a scalar k) at small batches inside a CUDA graph (the
    pipeline with ``candsmall``'s pass A and, for small k, the small-k search's own slots):
    every edge family's rows replayed through one capture, masks and top_k equal to the
    oracle's."""
    from qrita.reference import oracle

    rng = np.random.default_rng(B + 5)
    V = 131072
    rows = np.concatenate([batch for _, batch in generators._family_batches(V, rng)])
    x = _to_device(rows[:B], "float32")
    settings = ((50, None), (1000, None), (100, 0.9))
    for k, p in settings:  # compile outside the capture
        ops.top_k_top_p_mask(x, k, p)
    for k in (50, 1000):
        ops.top_k(x, k)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        masks = {(k, p): ops.top_k_top_p_mask(x, k, p) for k, p in settings}
        selections = {k: ops.top_k(x, k) for k in (50, 1000)}
    torch.cuda.current_stream().wait_stream(stream)
    for start in range(0, len(rows) - B + 1, B):
        fresh = rows[start:start + B]
        x.copy_(torch.from_numpy(fresh))
        graph.replay()
        torch.cuda.synchronize()
        for (k, p), mask in masks.items():
            compare.assert_mask_matches(_host(mask), fresh, k, p)
        for k, (values, indices) in selections.items():
            want = oracle.top_k(fresh, k)
            np.testing.assert_array_equal(_host(indices), want.indices)
            np.testing.assert_array_equal(_host(values), want.values)


@pytest.mark.gpu
def test_gpu_more_than_2_31_elements():
    V = 262144
    B = (2**31) // V + 3
    x = torch.randn((B, V), dtype=torch.float16, device="cuda")
    out = ops.top_k_top_p_mask(x, 50, 0.9)
    for row in [0, B // 2, B - 1]:
        compare.assert_mask_matches(_host(out[row:row + 1]), _host(x[row:row + 1]), 50, 0.9)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_gpu_one_launch_topk_mask(monkeypatch, dtype):
    """The opt-in one-launch top-k mask on the GPU: the same bits as the multi-launch pipeline
    (and the oracle), run to run, per row alone and in a batch, and under CUDA-graph replay."""
    rng = np.random.default_rng(29)
    for V in (32000, 131072, 262144):
        x_np = generators.zipf_logits(16, V, 1.1, rng)
        x_np[3] = generators.gaussian_logits(1, V, 2.0, rng)[0]
        x_np[5] = generators.quantised(x_np[5:6], 2)[0]  # ties
        x = _to_device(x_np, dtype)
        for k in (1, 50, 1000, 4096, torch.arange(1, 17, device="cuda") * 37):
            monkeypatch.setenv("QRITA_ONE_LAUNCH", "0")
            want = ops.top_k_top_p_mask(x, k, None)
            monkeypatch.setenv("QRITA_ONE_LAUNCH", "1")
            for batch in (1, 3, 16):
                k_b = k[:batch] if isinstance(k, torch.Tensor) else k
                for _ in range(3):
                    got = ops.top_k_top_p_mask(x[:batch].clone(), k_b, None)
                    assert torch.equal(got.view(torch.int16 if dtype == "bfloat16" else
                                                torch.int32),
                                       want[:batch].view(torch.int16 if dtype == "bfloat16" else
                                                         torch.int32)), (V, k, batch)
        k_host = 50
        compare.assert_mask_matches(_host(ops.top_k_top_p_mask(x[:4], k_host, None)),
                                    _host(x[:4]), k_host, None)
    monkeypatch.setenv("QRITA_ONE_LAUNCH", "1")
    x = _to_device(generators.zipf_logits(4, 131072, 1.1, rng), dtype)
    ops.top_k_top_p_mask(x, 50, None)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        out = ops.top_k_top_p_mask(x, 50, None)
    torch.cuda.current_stream().wait_stream(stream)
    fresh = generators.gaussian_logits(4, 131072, 2.0, rng)
    x.copy_(_to_device(fresh, dtype))
    graph.replay()
    torch.cuda.synchronize()
    compare.assert_mask_matches(_host(out), _host(x), 50, None)



@pytest.mark.parametrize("bins,one_launch", [(256, False), (1024, False), (256, True)])
def test_hist_band_is_exact_and_hits(monkeypatch, bins, one_launch):
    """The wide band placed from a count histogram of the row (``hist_bins``, the launch
    table's ``histband``) instead of from a sample: masks are the oracle's on every generator
    family and edge p, the histogram's kernels run instead of the band kernel, and the band
    finishes smooth rows (stats column 13; at p = 0.99 the gaussian ones: there a zipf row's
    crossing bin can hold more entries than the band may, on the GPU's table). A wide row needs
    more entries than the slots: V is larger on a GPU, whose slots are. ``one_launch``
    (``hist_one_launch``): the row's last counting program places the band, no merge launch,
    and the counters kept between calls are all zero after every call."""
    from dataclasses import replace

    from qrita.backends.triton import hist_band, wide
    from qrita.backends.triton import launch as launch_module

    table = launch_module.pipeline_config
    monkeypatch.setattr(launch_module, "pipeline_config",
                        lambda V, dtype: replace(table(V, dtype), hist_bins=bins,
                                                 hist_one_launch=one_launch,
                                                 hist_small_batch=0))  # these at every batch
    monkeypatch.setenv("QRITA_ONE_LAUNCH_SCRATCH", "keep")
    monkeypatch.setattr(launch_module, "_KEPT_HIST", {})
    monkeypatch.setattr(launch_module, "_KEPT_HIST_VIEWS", {})
    launches = _site_launches(monkeypatch, hist_band.hist_band_count_kernel,
                              hist_band.hist_band_merge_kernel, wide.wide_band_kernel)
    rng = np.random.default_rng(37)
    V = 65537 if ON_GPU else 1500
    failures = []
    for family, batch in generators._family_batches(V, rng):
        for p in (1e-7, 0.9, 0.99, 1 - 1e-6):
            try:
                run_and_check(batch[:3], "float32", None, p)
            except AssertionError as err:
                failures.append(f"{family}/p={p}: {err}")
    assert not failures, f"{len(failures)} failing:\n" + "\n".join(failures[:5])
    names = {kernel.fn.__name__ for kernel, _, _ in launches}
    assert names == ({"hist_band_count_kernel"} if one_launch
                     else {"hist_band_count_kernel", "hist_band_merge_kernel"}), names
    kept = list(launch_module._KEPT_HIST.values())
    assert len(kept) == (1 if one_launch else 0)
    assert not any(_host(buffer).any() for buffer in kept)  # left all zero
    smooth = np.concatenate([generators.zipf_logits(2, V, 1.1, rng),
                             generators.gaussian_logits(2, V, 2.0, rng)])
    for dtype in ("float32", "bfloat16"):
        for p in (0.9, 0.99):
            stats = torch.zeros((4, ops.STATS_WIDTH), dtype=torch.int32, device=DEVICE)
            run_and_check(generators.to_dtype(smooth, dtype), dtype, None, p, stats=stats)
            assert (stats[:, 0].cpu().numpy() == 4).all(), stats[:, 0]
            finished = stats[:, 13].cpu().numpy() == 1
            assert (finished if p == 0.9 else finished[2:]).all(), (dtype, p, stats[:, 13])


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_keyed_band_is_exact_and_finishes_tied_rows(monkeypatch, dtype):
    """16-bit rows count their band per value (``key_shift``, the launch table's ``keyband``):
    masks are the oracle's on every generator family and edge p, and on rows whose boundary
    value has more copies than the slots (rows of a few dozen neighbouring 16-bit values,
    hundreds of copies each) the band finishes the row (stats column 13, no 16-way round),
    where the compacted band (``key_shift`` 0) overflows and takes the rounds: the same masks
    both ways."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module
    from qrita.backends.triton import wide

    table = launch_module.pipeline_config
    rng = np.random.default_rng(47)
    V = 65537 if ON_GPU else 1999
    # N(4, step^2): the step of the dtype's values in [4, 8), about a dozen values per row
    step = {"bfloat16": 2.0**-5, "float16": 2.0**-8}[dtype]
    tied = (4.0 + step * rng.standard_normal((3, V))).astype(np.float32)
    tied = np.concatenate([tied, generators.zipf_logits(1, V, 1.1, rng)])
    stats_by = {}
    for keyed in (True, False):
        def config(V, dtype, keyed=keyed):
            cfg = table(V, dtype)
            return cfg if keyed else replace(cfg, key_shift=0)

        monkeypatch.setattr(launch_module, "pipeline_config", config)
        assert (config(V, getattr(torch, dtype)).key_shift > 0) == keyed
        launches = _site_launches(monkeypatch, wide.wide_compact_kernel)
        for p in (0.9, 0.99):
            stats = torch.zeros((tied.shape[0], ops.STATS_WIDTH), dtype=torch.int32,
                                device=DEVICE)
            out = run_and_check(generators.to_dtype(tied, dtype), dtype, None, p, stats=stats)
            stats_by[keyed, p] = (_host(stats), _host(out).astype(np.float32).view(np.int32))
        shifts = {kwargs["KEY_SHIFT"] for _, _, kwargs in launches if kwargs["BAND"]}
        assert shifts == {({"bfloat16": 16, "float16": 13}[dtype] if keyed else 0)}, shifts
    for p in (0.9, 0.99):
        keyed_stats, keyed_out = stats_by[True, p]
        plain_stats, plain_out = stats_by[False, p]
        np.testing.assert_array_equal(keyed_out, plain_out)
        assert (keyed_stats[:, 0] == 4).all(), keyed_stats[:, 0]
        # every row finishes on the keyed band; the tied rows overflow the compacted band
        assert (keyed_stats[:, 13] == 1).all() and (keyed_stats[:, 4] == 0).all(), keyed_stats
        if p == 0.9:
            assert (plain_stats[:3, 4] > 0).all(), plain_stats[:, 4]
    monkeypatch.setattr(launch_module, "pipeline_config", table)
    failures = []
    for family, batch in generators._family_batches(V, rng):
        for p in (1e-7, 0.5, 0.9, 0.99, 1 - 1e-6):
            try:
                run_and_check(generators.to_dtype(batch[:3], dtype), dtype, None, p)
            except AssertionError as err:
                failures.append(f"{family}/p={p}: {err}")
    assert not failures, f"{len(failures)} failing:\n" + "\n".join(failures[:5])


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("has_k,has_p,lean,smallest", [
    (True, False, False, False), (True, False, False, True), (False, True, True, False),
    (False, True, False, False), (True, True, True, False)])
def test_pass_a_load_slots_give_the_same_bits(dtype, has_k, has_p, lean, smallest):
    """Pass A taking two or four tiles a turn, each in its own load slot (``candidates_kernel``'s
    SLOTS, the launch table's ``slots``) against the one-tile ring: every segment's
    statistics (max, masses, counts, keys) and every candidate slot bit for bit, for top-k,
    top-p (lean and online masses) and both, on every generator family at V = 1000 (segments of
    four 32-entry tiles, the last one short); cutoffs from each row's quantiles, the floor and
    above every key. The counts are checked against NumPy, so a loop that skipped or repeated
    a tile fails."""
    from qrita.backends.triton import pipeline
    from qrita.reference import keys as ref_keys

    KEY_NAN = -(2**31)
    V, seg_len, block, cap_seg, nseg_p2 = _PASS_A_SHAPE
    nseg = -(-V // seg_len)
    xt, xh, rank = _pass_a_rows(dtype, smallest, seed=61)
    B = xh.shape[0]
    choices = [np.quantile(rank, 0.995, axis=1), np.quantile(rank, 0.5, axis=1),
               np.full(B, KEY_NAN), np.full(B, 2**31 - 1)]
    cutoff = np.stack(choices, axis=1)[np.arange(B), np.arange(B) % len(choices)]
    cutoff = np.clip(cutoff, KEY_NAN, 2**31 - 1).astype(np.int32)
    k_arr = torch.from_numpy(np.arange(B) % 7 * 9 + 1).to(torch.int64).to(DEVICE)
    p_arr = torch.from_numpy(np.linspace(0.05, 0.95, B, dtype=np.float32)).to(DEVICE)
    outs = {}
    for slots in (0, 2, 4):
        cand_val = torch.full((B, nseg_p2 * cap_seg), -7.0, dtype=torch.float32, device=DEVICE)
        cand_idx = torch.full((B, nseg_p2 * cap_seg), -7, dtype=torch.int32, device=DEVICE)
        seg_f = torch.full((B, nseg, 4), -7.0, dtype=torch.float32, device=DEVICE)
        seg_i = torch.full((B, nseg, 8), -7, dtype=torch.int32, device=DEVICE)
        dummy_i = torch.zeros(B * 16, dtype=torch.int32, device=DEVICE)
        pipeline.candidates_kernel[(B, nseg)](
            xt, k_arr, p_arr, torch.from_numpy(cutoff).to(DEVICE), V, xt.stride(0), seg_len,
            0, 0.0, dummy_i, cand_val, cand_idx, seg_f, seg_i, HAS_K=has_k, K_ARRAY=True,
            HAS_P=has_p, P_ARRAY=True, SMALLEST=smallest, BLOCK=block, CAP_SEG=cap_seg,
            NSEG_P2=nseg_p2, SPARSE=4, ONLY_RETRY=False, LEAN=lean, CAND_TOP=has_k and not has_p,
            SLOTS=slots, num_warps=1)
        outs[slots] = [a.cpu().numpy() for a in (seg_f, seg_i, cand_val, cand_idx)]
    for slots in (2, 4):
        for ring, slotted in zip(outs[0], outs[slots]):
            assert np.array_equal(ring.view(np.int32), slotted.view(np.int32)), slots
    # the candidates' counts: NumPy's (the one float compare against the cutoff's value)
    floor_cut = np.maximum(cutoff.astype(np.int64), -2139095041)
    bound_key = (~floor_cut if smallest else floor_cut).astype(np.int32)
    bound_val = ref_keys.key_to_value(bound_key)[:, None]
    with np.errstate(invalid="ignore"):
        passes = (xh <= bound_val) if smallest else (xh >= bound_val)
    counts = np.add.reduceat(passes, np.arange(0, V, seg_len), axis=1)
    assert np.array_equal(outs[0][1][:, :, 0], counts)
    assert (counts > 0).any() and (counts == 0).any()


def test_pass_a_load_slots_follow_the_table(monkeypatch):
    """The GPU table gives pass A two load slots (``slots``) for every call, top-p included, at
    most 64 registers a thread where it has slots (``slotsregs``), and the wide compaction two
    slots for float32 rows only (``widepaired``; H100, BENCHMARKS.md forty-fifth session);
    ``slots=0x0`` is the ring, ``slots=2x128`` keeps top-p calls above 128 rows on it,
    ``slotsregs=0x0`` lifts the limit; and the segment is a multiple of four of pass A's tiles,
    as SLOTS needs."""
    from qrita.backends.triton import launch

    kinds = dict(has_k=True, k_array=False, has_p=False, p_array=False, smallest=False,
                 select=True, wide=False, retry=False)
    for dtype in (torch.float32, torch.bfloat16):
        monkeypatch.setenv("QRITA_LAUNCH_TABLE", "")
        cfg = launch._pipeline_config(131072, dtype, False, "")
        assert (cfg.tile_slots, cfg.slots_topp_rows, cfg.regs_slots) == (2, 0, 64)
        assert cfg.wide_paired == (dtype == torch.float32)
        assert cfg.seg_len % (4 * cfg.block_cand) == 0
        assert [launch.pass_a_slots(cfg, has_p, b) for has_p in (False, True)
                for b in (1, 256, 4096)] == [2] * 6
        # the register limit reaches pass A's launch only where it has slots
        plan = launch._plan(cfg, **kinds, tile_slots=2)["candidates_False"]
        assert plan["SLOTS"] == 2 and plan["maxnreg"] == 64
        plan = launch._plan(cfg, **kinds, tile_slots=0)["candidates_False"]
        assert plan["SLOTS"] == 0 and "maxnreg" not in plan
        # (read by the table; the argument keys its cache)
        for table, slots, regs in [("slots=0x0", 0, 64), ("slots=2x128", 2, 64),
                                   ("slotsregs=0x0", 2, 0), ("slots=4x0", 4, 64)]:
            monkeypatch.setenv("QRITA_LAUNCH_TABLE", table)
            other = launch._pipeline_config(131072, dtype, False, table)
            assert (other.tile_slots, other.regs_slots) == (slots, regs), table
        monkeypatch.setenv("QRITA_LAUNCH_TABLE", "slots=2x128")
        ring_above = launch._pipeline_config(131072, dtype, False, "slots=2x128")
        assert [launch.pass_a_slots(ring_above, True, b) for b in (128, 129)] == [2, 0]
        assert launch.pass_a_slots(ring_above, False, 4096) == 2
        monkeypatch.setenv("QRITA_LAUNCH_TABLE", "slotsregs=0x0")
        free = launch._pipeline_config(131072, dtype, False, "slotsregs=0x0")
        plan = launch._plan(free, **kinds, tile_slots=2)["candidates_False"]
        assert plan["SLOTS"] == 2 and "maxnreg" not in plan
        # the wide band compaction's register limit (``compactregs``: 80 for float32 rows,
        # none for 16-bit ones) and its search's (``wsearchregs``: 80) reach the band's
        # launches only; ``0x0`` lifts them
        wide = dict(kinds, has_k=False, has_p=True, select=False, wide=True)
        monkeypatch.setenv("QRITA_LAUNCH_TABLE", "")
        plan = launch._plan(cfg, **wide, tile_slots=2)
        assert plan["compact_True"].get("maxnreg") == (80 if dtype == torch.float32 else None)
        assert plan["search_True"]["maxnreg"] == 80
        assert "maxnreg" not in plan["compact_False"] and "maxnreg" not in plan["search_False"]
        table = "compactregs=0x0,wsearchregs=0x0"
        monkeypatch.setenv("QRITA_LAUNCH_TABLE", table)
        plan = launch._plan(launch._pipeline_config(131072, dtype, False, table), **wide,
                            tile_slots=2)
        assert "maxnreg" not in plan["compact_True"] and "maxnreg" not in plan["search_True"]
        table = "compactregs=96x0,wsearchregs=64x0"
        monkeypatch.setenv("QRITA_LAUNCH_TABLE", table)
        plan = launch._plan(launch._pipeline_config(131072, dtype, False, table), **wide,
                            tile_slots=2)
        assert (plan["compact_True"]["maxnreg"], plan["search_True"]["maxnreg"]) == (96, 64)
