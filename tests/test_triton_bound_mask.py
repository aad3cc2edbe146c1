"""The top-p mask through the fused top-p search and the bound writer
(``launch.launch_fused_topp_mask``, ``bound_mask.bound_mask_kernel``; ``QRITA_MASK_FUSED_TOPP=1``)
against the oracle: full masks, every generator family, every dtype, in place and out of place,
both routes of the search (its histogram band and its pivot rounds), and batch invariance.
Runs under ``TRITON_INTERPRET=1`` on the CPU and on a GPU.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _triton_env import DEVICE, ON_GPU, torch  # first: sets up triton
from test_triton_masks import TORCH_DTYPES, _arg, _check_cases, _host, _to_device, run_and_check

from qrita.backends.triton import launch as launch_mod  # noqa: E402
from qrita.backends.triton import ops  # noqa: E402
from qrita.testing import compare, generators  # noqa: E402


@pytest.fixture
def fused_topp_mask(monkeypatch, count_calls):
    """The knob on; the list grows by one per call that took the fused top-p mask."""
    monkeypatch.setenv("QRITA_MASK_FUSED_TOPP", "1")
    return count_calls(launch_mod, "launch_fused_topp_mask")


def _top_p_cases(V_list, dtypes, families=None):
    """The generator's cases whose top-k is off (None or a scalar k <= 0 or >= V) and whose
    top-p is given: the masks the fused top-p path answers."""
    for case in generators.cases(V_list, dtypes, families=families):
        V = case.logits.shape[-1]
        k_off = case.k is None or (not isinstance(case.k, np.ndarray)
                                   and not 0 < int(case.k) < V)
        if k_off and case.p is not None:
            yield case


@pytest.mark.parametrize("dtype", list(TORCH_DTYPES))
@pytest.mark.parametrize("V", [1, 2, 3, 130])
def test_small_vocab_every_top_p_case(fused_topp_mask, V, dtype):
    cases = list(_top_p_cases([V], [dtype]))
    assert cases
    _check_cases(cases, dtype)
    assert len(fused_topp_mask) == len(cases)  # every one took the fused top-p mask


@pytest.mark.parametrize("family", generators.FAMILIES)
@pytest.mark.parametrize("dtype", list(TORCH_DTYPES))
def test_odd_vocab_1023(fused_topp_mask, family, dtype):
    cases = list(_top_p_cases([1023], [dtype], families=[family]))
    _check_cases(cases, dtype)
    assert len(fused_topp_mask) == len(cases)


@pytest.mark.parametrize("dtype", list(TORCH_DTYPES))
@pytest.mark.parametrize("fill", [float("-inf"), -1e4, 0.0, float("nan")])
def test_in_place_and_fill(fused_topp_mask, dtype, fill):
    rng = np.random.default_rng(11)
    x = np.concatenate([generators.zipf_logits(2, 777, 1.1, rng),
                        generators.tied_boundary_rows(2, 777, rng=rng)])
    x = generators.to_dtype(x, dtype)
    p = np.array([0.9, 0.5, 0.99, 1e-9])
    for inplace in (False, True):
        run_and_check(x, dtype, None, p, fill=fill, inplace=inplace)
        run_and_check(x, dtype, 0, 0.7, fill=fill, inplace=inplace)
    assert len(fused_topp_mask) == 4


@pytest.mark.parametrize("p_dtype", [torch.float32, torch.float64])
def test_per_row_p_tensors(fused_topp_mask, p_dtype):
    rng = np.random.default_rng(12)
    x = generators.gaussian_logits(7, 600, 2.0, rng)
    p = np.array([0.0, 1e-9, 0.3, 0.9, 1.0, math.nan, 0.999999])
    t = _to_device(x, "float32")
    out = ops.top_k_top_p_mask(t, None, _arg(p, p_dtype))
    p_seen = p.astype(np.float32).astype(np.float64) if p_dtype == torch.float32 else p
    compare.assert_mask_matches(_host(out), _host(t), None, p_seen)
    assert len(fused_topp_mask) == 1


def test_the_knob_leaves_other_masks_alone(fused_topp_mask):
    rng = np.random.default_rng(13)
    x = generators.zipf_logits(3, 500, 1.1, rng)
    run_and_check(x, "float32", 50, 0.9)  # top-k on
    run_and_check(x, "float32", np.array([5, 0, 499]), 0.9)  # per-row k
    run_and_check(x, "float32", 7, None)  # top-k alone
    assert fused_topp_mask == []
    run_and_check(x, "float32", 500, 0.9)  # k >= V: top-k off
    assert len(fused_topp_mask) == 1


@pytest.mark.parametrize("route", ["band", "rounds", "one_launch"])
@pytest.mark.parametrize("dtype", list(TORCH_DTYPES))
def test_both_routes_of_the_search_are_exact(monkeypatch, route, dtype):
    """The histogram band (default), the pivot rounds alone (QRITA_TOPP_HIST=0) and both in one
    launch (QRITA_TOPP_SPLIT=0), with a gather capacity small enough that many rows miss the
    band and some searches end on ties wider than it."""
    if route == "rounds":
        monkeypatch.setenv("QRITA_TOPP_HIST", "0")
    if route == "one_launch":
        monkeypatch.setenv("QRITA_TOPP_SPLIT", "0")
    rng = np.random.default_rng(14)
    V = 1500
    x = np.concatenate([generators.zipf_logits(2, V, 1.1, rng),
                        generators.gaussian_logits(2, V, 2.0, rng),
                        generators.quantised(generators.gaussian_logits(2, V, 2.0, rng), 2),
                        generators.tied_boundary_rows(2, V, rng=rng),
                        generators.inject_posinf(generators.gaussian_logits(1, V, 2.0, rng), 5,
                                                 rng),
                        generators.grammar_rows(1, V, 0.99, rng)])
    x = generators.to_dtype(x, dtype)
    B = x.shape[0]
    p = np.resize(np.array([0.9, 0.5, 0.99, 0.2, 1e-9, 0.999]), B)
    t = _to_device(x, dtype)
    rounds = torch.zeros((B, 2), dtype=torch.int32, device=DEVICE)
    out = torch.empty_like(t)
    launch_mod.launch_fused_topp_mask(t, out, _arg(p), float("-inf"), rounds=rounds, cap=16)
    compare.assert_mask_matches(_host(out), _host(t), None, p)
    r = rounds.cpu().numpy()
    if route == "band":
        assert (r[:, 0] > 0).any() and (r[:, 1] > 0).any()  # some rows each way
    else:
        assert (r[:, 1] > 0).any()


def test_a_rows_mask_does_not_depend_on_its_batch(fused_topp_mask):
    rng = np.random.default_rng(15)
    V = 999
    rows = np.concatenate([generators.zipf_logits(3, V, 1.1, rng),
                           generators.gaussian_logits(3, V, 2.0, rng),
                           generators.tied_boundary_rows(2, V, rng=rng)])
    B = rows.shape[0] if not ON_GPU else 64
    batch = np.resize(rows, (B, V))
    t = _to_device(batch, "float32")
    whole = _host(ops.top_k_top_p_mask(t, None, 0.9))
    for i in range(rows.shape[0]):
        alone = _host(ops.top_k_top_p_mask(t[i:i + 1].clone(), None, 0.9))
        assert np.array_equal(compare.bits_of(alone[0]), compare.bits_of(whole[i]))
    flipped = _host(ops.top_k_top_p_mask(t.flip(0).contiguous(), None, 0.9))
    assert np.array_equal(compare.bits_of(flipped[::-1]), compare.bits_of(whole))


# ------------------------------------------------------------------------------ GPU only
GPU_P = [1e-9, 0.5, 0.9, 0.99, 1 - 1e-7, 0.0, 1.0]


@pytest.mark.gpu
@pytest.mark.parametrize("V,dtype", [(32000, "float32"), (128256, "float32"),
                                     (151936, "float32"), (201088, "float32"),
                                     (262144, "float32"), (128256, "bfloat16"),
                                     (151936, "float16"), (262144, "bfloat16")])
def test_gpu_real_vocab(fused_topp_mask, V, dtype):
    failures = []
    rng = np.random.default_rng(V + 1)
    for family, batch in generators._family_batches(V, rng):
        x = generators.to_dtype(batch, dtype)
        for p in GPU_P:
            try:
                run_and_check(x, dtype, None, p)
            except AssertionError as err:
                failures.append(f"{family}/V={V}/{dtype}/p={p}: {err}")
    assert not failures, f"{len(failures)} failing:\n" + "\n".join(failures[:10])
    assert fused_topp_mask  # (a call replayed from qrita's eager graph does not count)


@pytest.mark.gpu
@pytest.mark.parametrize("B", [1, 3, 64, 1024])
@pytest.mark.parametrize("workload", ["zipf", "gaussian"])
@pytest.mark.parametrize("dtype", list(TORCH_DTYPES))
def test_gpu_batches(fused_topp_mask, B, workload, dtype):
    rng = np.random.default_rng(B + 3)
    V = 131072
    make = generators.zipf_logits if workload == "zipf" else generators.gaussian_logits
    x = make(B, V, 1.1 if workload == "zipf" else 2.0, rng)
    rows = np.sort(rng.choice(B, size=min(B, 48), replace=False))
    xt = _to_device(x, dtype)
    x_host = _host(xt)
    for p in (0.9, 0.99, 0.5):
        out = _host(ops.top_k_top_p_mask(xt, None, p))
        compare.assert_mask_matches(out[rows], x_host[rows], None, p)
    assert fused_topp_mask


@pytest.mark.gpu
def test_gpu_deterministic_and_batch_invariant(fused_topp_mask):
    rng = np.random.default_rng(16)
    V = 151936
    big = generators.zipf_logits(1024, V, 1.1, rng)
    big[::7] = generators.gaussian_logits(len(big[::7]), V, 2.0, rng)
    xt = _to_device(big, "float32")
    for p in (0.9, 0.99):
        first = ops.top_k_top_p_mask(xt, None, p)
        for _ in range(9):
            again = ops.top_k_top_p_mask(xt, None, p)
            assert torch.equal(first.view(torch.int32), again.view(torch.int32))
        for row in [0, 7, 500, 1023]:
            alone = ops.top_k_top_p_mask(xt[row:row + 1].clone(), None, p)
            assert torch.equal(alone[0].view(torch.int32), first[row].view(torch.int32))
            for rows_in, at in ((64, 17), (128, 100)):
                batch = xt[:rows_in].clone()
                batch[at] = xt[row]
                in_batch = ops.top_k_top_p_mask(batch, None, p)
                assert torch.equal(in_batch[at].view(torch.int32), first[row].view(torch.int32))


@pytest.mark.gpu
@pytest.mark.parametrize("inplace", [False, True])
def test_gpu_cuda_graph_capture_and_replay(fused_topp_mask, inplace):
    rng = np.random.default_rng(17)
    V = 128256
    x = _to_device(generators.zipf_logits(64, V, 1.1, rng), "float32")
    p = torch.full((64,), 0.9, dtype=torch.float32, device="cuda")
    ops.top_k_top_p_mask(x.clone(), None, p, inplace=inplace)  # compile outside the capture
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        out = ops.top_k_top_p_mask(x, None, p, inplace=inplace)
    torch.cuda.current_stream().wait_stream(stream)
    fresh = generators.gaussian_logits(64, V, 2.0, rng)
    x.copy_(torch.from_numpy(fresh))
    p.fill_(0.5)
    graph.replay()
    torch.cuda.synchronize()
    compare.assert_mask_matches(_host(out), fresh, None, 0.5)


@pytest.mark.gpu
def test_gpu_more_than_2_31_elements(fused_topp_mask):
    V = 262144
    B = (2**31) // V + 3
    x = torch.randn((B, V), dtype=torch.float16, device="cuda")
    out = ops.top_k_top_p_mask(x, None, 0.9)
    for row in [0, B // 2, B - 1]:
        compare.assert_mask_matches(_host(out[row:row + 1]), _host(x[row:row + 1]), None, 0.9)
    assert fused_topp_mask
