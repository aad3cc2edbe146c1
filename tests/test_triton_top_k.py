"""Triton selection (``ops.top_k``) against the oracle: full values and indices compared.

CPU-only machines run the kernels under the Triton interpreter (tests/conftest.py); the ``gpu``
tests add real vocabulary sizes, large batches, determinism and CUDA-graph capture.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from qrita.backends.triton import ops  # noqa: E402
from qrita.testing import compare, generators  # noqa: E402

ON_GPU = torch.cuda.is_available()
DEVICE = "cuda" if ON_GPU else "cpu"
TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def _host(t):
    t = t.detach().cpu()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy().copy()  # never a live view


def _bits(t):
    return t.view(torch.int32 if t.element_size() == 4 else torch.int16)


def check(x_np, dtype, k, mode, sorted_):
    x = torch.from_numpy(np.ascontiguousarray(x_np)).to(DEVICE).to(TORCH_DTYPES[dtype])
    vals, idx = ops.top_k(x, k, mode=mode, sorted=sorted_)
    assert vals.dtype == x.dtype and idx.dtype == torch.int64
    assert vals.shape == idx.shape == (x.shape[0], k)
    compare.assert_topk_matches(_host(vals), _host(idx), _host(x), k, -1, mode, sorted_)


FAMILIES = ["zipf", "gaussian", "quantised2", "all_equal", "grammar", "nan", "posinf",
            "tied_boundary", "five_zeros", "sorted_asc", "extremes"]


def _family(name, V, rng):
    return dict(generators._family_batches(V, rng))[name]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("dtype", list(TORCH_DTYPES))
def test_top_k_families(family, dtype):
    rng = np.random.default_rng(hash(family) % 1000)
    for V in (1, 3, 1023):
        x = generators.to_dtype(_family(family, V, rng), dtype)
        for k in sorted({1, 2, 50, V - 1, V} & set(range(1, V + 1))):
            for mode in ("largest", "smallest"):
                check(x, dtype, k, mode, True)
        check(x, dtype, min(7, V), "largest", False)


def test_top_k_float64_and_integers_exact_path():
    rng = np.random.default_rng(1)
    x64 = generators.quantised(generators.gaussian_logits(3, 501, 2.0, rng), 5).astype(np.float64)
    x64[0, 7] = np.nan
    xi = rng.integers(-5, 5, size=(3, 501)).astype(np.int32)
    for arr in (x64, xi, xi.astype(np.int64)):
        t = torch.from_numpy(arr).to(DEVICE)
        for k, mode, srt in [(1, "largest", True), (40, "smallest", True), (500, "largest", False)]:
            vals, idx = ops.top_k(t, k, mode=mode, sorted=srt)
            compare.assert_topk_matches(vals.cpu().numpy(), idx.cpu().numpy(), arr, k, -1, mode,
                                        srt)


@pytest.mark.gpu
@pytest.mark.parametrize("V,dtype", [(32000, "float32"), (128256, "bfloat16"), (151936, "float32"),
                                     (201088, "float16"), (262144, "float32")])
def test_gpu_top_k_real_vocab(V, dtype):
    rng = np.random.default_rng(V)
    for family in FAMILIES:
        x = generators.to_dtype(_family(family, V, rng), dtype)
        for k in (1, 50, 1000, 4096):
            check(x, dtype, k, "largest", True)
        check(x, dtype, 50, "smallest", True)
        check(x, dtype, 1000, "largest", False)


@pytest.mark.gpu
@pytest.mark.parametrize("B,dtype", [(1, "float32"), (3, "float32"), (16, "float32"),
                                     (64, "float32"), (128, "float32"), (1024, "float32"),
                                     (256, "bfloat16"), (1024, "bfloat16")])
def test_gpu_top_k_batches_deterministic_invariant(B, dtype):
    """top_k on zipf rows (V = 131072) at batch B: the oracle's selection on 32 of them, the same
    bits on every call, and a row alone gives what it gave in the batch; k = 50, 1000 and 4096
    (past the usual slots: ``capk``); bfloat16 at 256 and 1024 rows."""
    rng = np.random.default_rng(B)
    V = 131072
    x = torch.from_numpy(generators.zipf_logits(B, V, 1.1, rng)).cuda().to(TORCH_DTYPES[dtype])
    rows = np.sort(rng.choice(B, size=min(B, 32), replace=False))
    for k in (50, 1000, 4096):
        vals, idx = ops.top_k(x, k)
        compare.assert_topk_matches(_host(vals)[rows], _host(idx)[rows], _host(x)[rows], k, -1,
                                    "largest", True)
        for _ in range(3):
            v2, i2 = ops.top_k(x, k)
            assert torch.equal(i2, idx) and torch.equal(_bits(v2), _bits(vals))
        alone_v, alone_i = ops.top_k(x[B - 1:B].clone(), k)
        assert torch.equal(alone_i[0], idx[B - 1])


@pytest.mark.gpu
def test_gpu_top_k_cuda_graph():
    rng = np.random.default_rng(2)
    x = torch.from_numpy(generators.zipf_logits(64, 131072, 1.1, rng)).cuda()
    ops.top_k(x, 50)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        vals, idx = ops.top_k(x, 50)
    torch.cuda.current_stream().wait_stream(stream)
    fresh = generators.gaussian_logits(64, 131072, 2.0, rng)
    x.copy_(torch.from_numpy(fresh))
    graph.replay()
    torch.cuda.synchronize()
    compare.assert_topk_matches(_host(vals), _host(idx), fresh, 50, -1, "largest", True)


ONE_LAUNCH_FAMILIES = ["zipf", "tied_boundary", "nan", "all_equal", "grammar", "posinf"]


@pytest.mark.parametrize("dtype", list(TORCH_DTYPES))
def test_one_launch_top_k_is_exact(monkeypatch, count_calls, dtype):
    """QRITA_ONE_LAUNCH=1: small batches take the one-launch selection (checked), which sorts the
    survivors in registers; values and indices equal the oracle's on the edge families, for
    k = 1, 50, V - 1 (more than the candidate slots: the full-row fallback, then the sort) and V
    (every entry), largest and smallest, sorted and in index order."""
    monkeypatch.setenv("QRITA_ONE_LAUNCH", "1")
    taken = count_calls(ops, "launch_select_one")
    rng = np.random.default_rng(31)
    V = 1023
    failures = []
    for family in ONE_LAUNCH_FAMILIES:
        x = generators.to_dtype(_family(family, V, rng), dtype)
        cases = [(1, "largest", True), (50, "largest", True), (V - 1, "largest", True),
                 (V, "largest", True), (50, "smallest", True), (7, "largest", False)]
        for k, mode, sorted_ in cases:
            try:
                check(x, dtype, k, mode, sorted_)
            except AssertionError as err:
                failures.append(f"{family}/k={k}/{mode}/sorted={sorted_}: {err}")
    assert not failures, f"{len(failures)} failing:\n" + "\n".join(failures[:10])
    assert len(taken) == len(ONE_LAUNCH_FAMILIES) * 6
    # beyond the one-launch limits (a batch of 17 rows; a sorted k above SORT_MAX): the pipeline
    x = generators.to_dtype(generators.zipf_logits(17, 64, 1.1, rng), dtype)
    check(x, dtype, 5, "largest", True)
    wide = generators.to_dtype(generators.zipf_logits(1, 1200, 1.1, rng), dtype)
    check(wide, dtype, 1100, "largest", True)
    assert len(taken) == len(ONE_LAUNCH_FAMILIES) * 6


def test_row_chunks_give_the_same_selection(monkeypatch):
    """QRITA_CHUNK_ROWS=2: a batch of 5 rows selected in three passes equals the oracle."""
    monkeypatch.setenv("QRITA_CHUNK_ROWS", "2")
    monkeypatch.setenv("QRITA_ONE_LAUNCH", "0")
    rng = np.random.default_rng(43)
    x = generators.quantised(generators.zipf_logits(5, 301, 1.1, rng), 3)
    for k, mode, sorted_ in [(7, "largest", True), (40, "smallest", True), (9, "largest", False)]:
        check(x, "float32", k, mode, sorted_)


@pytest.mark.parametrize("route", ["kernel", "torch"])
def test_top_k_sort_routes(monkeypatch, route):
    """Both orderings of the pipeline's survivors: the per-row in-register sort (default) and
    the torch sort of rank keys (QRITA_SELECT_SORT=torch), on tied and NaN rows."""
    monkeypatch.setenv("QRITA_SELECT_SORT", route)
    rng = np.random.default_rng(11)
    x = np.concatenate([_family("tied_boundary", 777, rng), _family("nan", 777, rng),
                        _family("quantised2", 777, rng)])
    for dtype in ("float32", "bfloat16"):
        xd = generators.to_dtype(x, dtype)
        for k, mode in [(1, "largest"), (37, "smallest"), (300, "largest")]:
            check(xd, dtype, k, mode, True)


def test_sort_warps_follow_the_slots_and_the_batch(monkeypatch):
    """The per-row rank sort's warps: 4 up to 256 slots, 16 above; the launch table's
    ``sortsmall=RxW`` (default 64x32; ``sortsmall=0x32`` off) gives 1024 slots and more W
    warps at batches of at most R rows on NVIDIA only (AMD's blocks hold at most 16
    wavefronts); ``sortbig`` and ``sort`` override it."""
    from qrita.backends.triton import launch as launch_module

    def warps(k_p2, batch, hip=False, table=""):
        monkeypatch.setenv("QRITA_LAUNCH_TABLE", table)
        return launch_module._sort_warps(k_p2, table, batch, hip)

    assert [warps(k_p2, 64) for k_p2 in (64, 256, 512, 1024, 2048)] == [4, 4, 16, 32, 32]
    assert [warps(k_p2, 65) for k_p2 in (64, 256, 512, 1024, 2048)] == [4, 4, 16, 16, 16]
    assert [warps(1024, b) for b in (1, 64, 65, 1024)] == [32, 32, 16, 16]
    assert [warps(1024, b, table="sortsmall=0x32") for b in (1, 64, 1024)] == [16, 16, 16]
    assert warps(512, 8) == 16
    assert warps(1024, 1, hip=True) == 16
    assert warps(1024, 128, table="sortsmall=128x32") == 32
    assert warps(1024, 8, table="sortbig=0x8") == 8
    assert warps(64, 8, table="sort=0x2") == 2


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_selection_write_tile_gives_the_oracle_selection(monkeypatch, dtype):
    """``selblock`` (the launch table; ``block_select``): the selection's write in tiles smaller
    than the streaming tile (k == V rows copy theirs tile by tile, here 32 entries across
    segments of 256): on every generator family at once, V = 1000, k = 1, 50 (sorted and in
    index order), V - 1 and V, the oracle's values and indices; and every write launches with
    that tile."""
    from qrita.backends.triton import launch as launch_module

    monkeypatch.setenv("QRITA_LAUNCH_TABLE", "selblock=32x0")
    monkeypatch.setenv("QRITA_ONE_LAUNCH", "0")  # the pipeline, as in a graph
    tiles = []
    real_launch_site = launch_module.launch_site

    def recorded(site, kernel, grid, *args, **kwargs):
        if kernel is launch_module.write_select_kernel:
            tiles.append(kwargs["BLOCK"])
        return real_launch_site(site, kernel, grid, *args, **kwargs)

    monkeypatch.setattr(launch_module, "launch_site", recorded)
    rng = np.random.default_rng(47)
    V = 1000
    x = np.concatenate([rows for _, rows in generators._family_batches(V, rng)])
    x = generators.to_dtype(x, dtype)
    # (the interpreter sorts k near V slowly: those in index order only)
    for k, sorted_ in ((1, True), (50, True), (50, False), (V - 1, False), (V, False)):
        check(x, dtype, k, "largest", sorted_)
    assert tiles and set(tiles) == {32}, tiles


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_fused_select_gives_the_oracle_selection(monkeypatch, dtype):
    """``selfuse`` (the launch table; ``fused_select``): the per-row search writes the selection
    itself, sorted when asked (``threshold_select_kernel``), in place of the search,
    ``write_select_kernel`` and the sort. On every generator family at once (ties at the
    boundary, all-equal, -inf, NaN, +inf rows), V = 3 and 301, k from 1 to V (bfloat16: 50
    and V), largest and smallest, sorted and not: the oracle's values and indices, rows on the candidates, the
    fallback and k = V alike; and every such call launches the fused kernel, never the
    other two."""
    from dataclasses import replace

    from qrita.backends.triton import launch as launch_module

    real_config = launch_module.pipeline_config
    # (the interpreter's table retries from k = 5: the fused form takes calls without it)
    fused_config = lambda V, dt: replace(real_config(V, dt), fused_select=True,  # noqa: E731
                                         retry_min_k=4097)
    monkeypatch.setattr(launch_module, "pipeline_config", fused_config)
    monkeypatch.setattr(ops, "pipeline_config", fused_config)
    launched = []
    real_launch_site = launch_module.launch_site

    def recorded(site, kernel, *args, **kwargs):
        launched.append(getattr(kernel, "__name__", None) or kernel.fn.__name__)
        return real_launch_site(site, kernel, *args, **kwargs)

    monkeypatch.setattr(launch_module, "launch_site", recorded)
    rng = np.random.default_rng(41)
    for V in (3, 301):
        x = np.concatenate([rows for _, rows in generators._family_batches(V, rng)])
        x = generators.to_dtype(x, dtype)
        # (the interpreter sorts 512 slots slowly: k near V = 301 unsorted only; 16-bit rows
        # fewer calls, the same kernel)
        ks = {1, 50, V - 1, V} if dtype == "float32" else {50, V}
        for k in sorted(ks & set(range(1, V + 1))):
            for mode, sorted_ in (("largest", True), ("smallest", True), ("largest", False)):
                if sorted_ and k > 128:
                    continue
                launched.clear()
                check(x, dtype, k, mode, sorted_)
                assert "threshold_select_kernel" in launched, launched
                assert not {"threshold_kernel", "write_select_kernel",
                            "sort_selection_kernel"} & set(launched), launched
    # both tables keep it off (the GPU's since the selection's write got its 512-entry tile);
    # a call with the retry, a sort past SORT_MAX or fewer rows than asked never takes it
    cfg = real_config(1023, torch.float32)
    assert not cfg.fused_select
    gpu_table = launch_module._pipeline_config.__wrapped__
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        gpu = gpu_table(131072, dt, False, "")
        assert (gpu.fused_select, gpu.fused_select_rows) == (False, 0), (dt, gpu)
        assert gpu.block_select == 512, (dt, gpu)
    on = replace(cfg, fused_select=True, retry_min_k=4097)
    assert not launch_module.fused_select_applies(replace(on, retry_min_k=1023), 1023, 1023,
                                                  False, 1)
    assert not launch_module.fused_select_applies(on, 2000, 1025, True, 1)
    assert launch_module.fused_select_applies(on, 2000, 1025, False, 1)
    from_256 = replace(on, fused_select_rows=256)
    assert not launch_module.fused_select_applies(from_256, 2000, 50, True, 255)
    assert launch_module.fused_select_applies(from_256, 2000, 50, True, 256)


@pytest.mark.parametrize("shape,axis", [((3, 257), -1), ((3, 257), 1), ((257, 3), 0),
                                        ((2, 129, 3), 1), ((2, 3, 129), 2), ((129,), 0)])
def test_public_gpu_dispatch_moves_and_reshapes_the_axis(shape, axis):
    """``qrita._api._top_k_gpu_scoped`` (what a GPU array's ``qrita.top_k`` runs): the axis moved
    to the end and the leading axes flattened only where needed, the kernels' answer put back
    in the caller's layout; full values and indices against the oracle, both modes, sorted and
    not."""
    from qrita import _api
    from qrita.backends import _torch as torch_adapter

    rng = np.random.default_rng(len(shape) * 10 + axis)
    x_np = generators.quantised(generators.gaussian_logits(1, int(np.prod(shape)), 2.0, rng), 3)
    x_np = x_np.astype(np.float32).reshape(shape)  # ties at every boundary
    x = torch.from_numpy(np.ascontiguousarray(x_np)).to(DEVICE)
    n = shape[axis]
    for k in (1, 5, n):
        for mode in ("largest", "smallest"):
            for sorted_ in (True, False):
                vals, idx = _api._top_k_gpu_scoped(ops, torch_adapter, x, k, axis % len(shape),
                                                   mode, sorted_)
                compare.assert_topk_matches(_host(vals), _host(idx), x_np, k, axis, mode,
                                            sorted_)
