"""The mask pipeline's scratch from a caller's buffer (``qrita.backends.triton.arena``), as a
jitted JAX program recorded into XLA's CUDA graphs needs it: exact masks, no scratch from
torch's allocator, and a size known before the call (``launch.mask_scratch_words``).

On a CPU-only machine the kernels run under the Triton interpreter (small shapes)."""

from __future__ import annotations

import numpy as np
import pytest
from _triton_env import DEVICE, torch  # first: sets up triton

from qrita.backends.triton import arena, ops  # noqa: E402
from qrita.backends.triton import launch as launch_module  # noqa: E402
from qrita.testing import compare, generators  # noqa: E402


class _CountingTorch:
    """``torch`` as launch.py sees it, counting its ``empty`` / ``zeros`` calls."""

    def __init__(self):
        self.allocations = []

    def __getattr__(self, name):
        real = getattr(torch, name)
        if name in ("empty", "zeros"):
            def counted(*args, **kwargs):
                self.allocations.append((name, args, kwargs.get("dtype")))
                return real(*args, **kwargs)
            return counted
        return real


def _rows(rng, V):
    return np.concatenate([
        generators.zipf_logits(1, V, 1.1, rng),
        generators.quantised(generators.gaussian_logits(1, V, 2.0, rng), 2),  # ties
        generators.all_equal_rows(1, V),
        generators.bf16_round(generators.gaussian_logits(1, V, 2.0, rng)),
    ])


def _host(t):
    t = t.detach().cpu()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy().copy()


@pytest.mark.parametrize("hist_bins", [0, 64])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_masks_in_a_scratch_arena_are_exact_and_take_no_torch_scratch(monkeypatch, hist_bins,
                                                                      dtype):
    """In place (as the jit callback runs them), every k / p kind: the mask equals the
    oracle's, the pipeline's scratch all comes from the arena (launch.py asks torch for none),
    and ``mask_scratch_words`` is enough (a short buffer raises instead of writing past it).
    The buffer starts full of garbage: nothing may rely on fresh zeros."""
    from dataclasses import replace

    table = launch_module.pipeline_config
    monkeypatch.setattr(launch_module, "pipeline_config",
                        lambda V, dtype: replace(table(V, dtype), hist_bins=hist_bins))
    counting = _CountingTorch()
    monkeypatch.setattr(launch_module, "torch", counting)
    torch_dtype = getattr(torch, dtype)
    rng = np.random.default_rng(21)
    V = 1001
    x_np = _rows(rng, V)
    x_np[1, 7] = -np.inf
    x_np[3, 11] = np.nan
    B = x_np.shape[0]
    k_rows = np.array([1, 5, V, 40], dtype=np.int64)
    p_rows = np.array([0.9, 1e-9, 1.0, 0.5], dtype=np.float32)
    cases = [(5, None), (None, 0.9), (3, 0.8), (k_rows, None), (None, p_rows), (k_rows, p_rows),
             (V - 1, None), (None, 1.0)]
    used = []
    for k, p in cases:
        x = torch.from_numpy(x_np.copy()).to(DEVICE).to(torch_dtype)
        x_host = _host(x)
        k_arg = torch.from_numpy(k).to(DEVICE) if isinstance(k, np.ndarray) else k
        p_arg = torch.from_numpy(p).to(DEVICE) if isinstance(p, np.ndarray) else p
        words = launch_module.mask_scratch_words(B, V, torch_dtype, k_arg, p_arg)
        buffer = torch.full((words,), -123456, dtype=torch.int32, device=DEVICE)
        counting.allocations.clear()
        with arena.scratch_arena(buffer):
            out = ops.top_k_top_p_mask(x, k_arg, p_arg, inplace=True)
            used.append(arena._ARENA.used)
        assert out.data_ptr() == x.data_ptr()
        assert counting.allocations == [], (k, p, counting.allocations)
        compare.assert_mask_matches(_host(out), x_host, k, p)
        # the same path as a plain call: every row's stats (mode, boundary, band hit, ...)
        # equal; a wrong band from unzeroed counters would still give exact masks, not these
        stats = [torch.zeros((B, ops.STATS_WIDTH), dtype=torch.int32, device=DEVICE)
                 for _ in range(2)]
        plain = ops.top_k_top_p_mask(torch.from_numpy(x_np.copy()).to(DEVICE).to(torch_dtype),
                                     k_arg, p_arg, stats=stats[0])
        buffer.fill_(-123456)
        with arena.scratch_arena(buffer):
            again = ops.top_k_top_p_mask(torch.from_numpy(x_np.copy()).to(DEVICE).to(
                torch_dtype), k_arg, p_arg, stats=stats[1])
        assert torch.equal(stats[0], stats[1]), (k, p)
        assert torch.equal(plain.view(torch.int16 if dtype == "bfloat16" else torch.int32),
                           again.view(torch.int16 if dtype == "bfloat16" else torch.int32))
    assert all(u > 0 for u in used)


def test_a_short_scratch_buffer_raises_before_any_write():
    V, B = 700, 2
    x = torch.from_numpy(generators.zipf_logits(B, V, 1.1, np.random.default_rng(3))).to(DEVICE)
    words = launch_module.mask_scratch_words(B, V, torch.float32, None, 0.9)
    buffer = torch.zeros(words // 2, dtype=torch.int32, device=DEVICE)
    with pytest.raises(RuntimeError, match="scratch buffer holds"):
        with arena.scratch_arena(buffer):
            ops.top_k_top_p_mask(x, None, 0.9, inplace=True)
    assert not arena.active()


def test_arena_pieces_are_aligned_zeroed_on_request_and_contexts_nest():
    outer = torch.full((200,), 9, dtype=torch.int32)
    inner = torch.full((100,), 9, dtype=torch.int32)
    assert arena.take(4) is None and not arena.active()
    with arena.scratch_arena(outer):
        a = arena.take(5)
        assert a.data_ptr() == outer.data_ptr() and a.numel() == 5
        with arena.scratch_arena(inner):
            b = arena.take(3, zero=True)
            assert b.data_ptr() == inner.data_ptr() and int(b.abs().sum()) == 0
        c = arena.take(7)  # the outer arena goes on where it was: the next aligned word
        assert c.data_ptr() == outer.data_ptr() + 4 * arena.ALIGN_WORDS
        assert int(c.sum()) == 7 * 9  # not zeroed unless asked
    assert not arena.active()


@pytest.mark.parametrize("bad", [torch.zeros(8, dtype=torch.float32),
                                 torch.zeros((2, 8), dtype=torch.int32),
                                 torch.zeros(16, dtype=torch.int32)[::2]])
def test_scratch_arena_names_a_wrong_buffer(bad):
    with pytest.raises(ValueError, match="scratch buffer"):
        with arena.scratch_arena(bad):
            pass


def test_mask_scratch_words_of_nothing_is_zero():
    assert launch_module.mask_scratch_words(0, 100, torch.float32, 5, None) == 0
    assert launch_module.mask_scratch_words(3, 0, torch.float32, None, 0.9) == 0


def test_jit_masks_callback_takes_all_its_scratch_from_the_xla_buffer(monkeypatch):
    """``QRITA_JAX_COMMAND_BUFFER``'s callback (run here on torch CPU tensors standing in for
    XLA's buffers): the mask of per-row int32 k (JAX's default integer) and a scalar p equals
    the oracle's, launch.py asks torch for nothing, and the k cast lands in the scratch too."""
    import contextlib

    from qrita.backends import _jax_jit

    monkeypatch.setattr(_jax_jit, "_on_xla_stream", lambda ctx, device: contextlib.nullcontext())
    monkeypatch.setattr(_jax_jit, "_recording", lambda device: True)  # as in XLA's capture
    counting = _CountingTorch()
    monkeypatch.setattr(launch_module, "torch", counting)
    B, V = 3, 777
    x_np = generators.zipf_logits(B, V, 1.1, np.random.default_rng(4))
    x = torch.from_numpy(x_np.copy()).to(DEVICE)
    k_rows = np.array([1, 30, V], dtype=np.int32)
    k = torch.from_numpy(k_rows).to(DEVICE)
    words = _jax_jit.mask_scratch_words(B, V, np.float32, None, True, 0.9, False)
    assert words >= launch_module.mask_scratch_words(B, V, torch.float32, k.long(), 0.9)
    scratch = torch.full((words,), -5, dtype=torch.int32, device=DEVICE)
    out = torch.empty_like(x)
    real_as_int64 = _jax_jit._as_int64
    casts = []
    monkeypatch.setattr(_jax_jit, "_as_int64",
                        lambda t: casts.append(arena.active()) or real_as_int64(t))
    _jax_jit._gpu_masks_callback(None, (out, scratch), x, k, k_static=None, p_static=0.9,
                                 has_k=True, has_p=False, fill=float("-inf"), scratch=True)
    assert counting.allocations == []
    assert casts == [True]
    assert int((scratch != -5).sum()) > 0
    compare.assert_mask_matches(_host(out), x_np, k_rows.astype(np.int64), 0.9)
    assert not arena.active()


@pytest.mark.parametrize(("k", "sorted", "dtype", "copy"), [
    (1, True, "float32", True), (30, False, "bfloat16", False), (30, True, "float16", True),
    (777, True, "float32", False)])
def test_jit_top_k_callback_takes_all_its_scratch_from_the_xla_buffer(monkeypatch, k, sorted,
                                                                      dtype, copy):
    """The command-buffer ``top_k`` callback (torch CPU tensors standing in for XLA's buffers):
    values and indices (cast to JAX's int32) equal the oracle's, launch.py asks torch for
    nothing (the selection too comes from the scratch), and the scratch size covers it. With
    ``copy`` (``QRITA_JAX_TOP_K_COPY``) the kernels read XLA's copy of the input (here the
    input itself is NaN: reading it would change the answer)."""
    import contextlib

    from qrita.backends import _jax_jit
    from qrita.reference import oracle

    monkeypatch.setattr(_jax_jit, "_on_xla_stream", lambda ctx, device: contextlib.nullcontext())
    monkeypatch.setattr(_jax_jit, "_recording", lambda device: True)  # as in XLA's capture
    counting = _CountingTorch()
    monkeypatch.setattr(launch_module, "torch", counting)
    V = 777
    x_np = _rows(np.random.default_rng(9), V)
    x = torch.from_numpy(x_np).to(DEVICE).to(getattr(torch, dtype))
    rows = x.shape[0]
    words = _jax_jit.top_k_scratch_words(rows, V, np.dtype(np.float32) if dtype == "float32"
                                         else np.dtype(np.float16), k, sorted)
    if dtype == "bfloat16":  # the same itemsize as float16: the same words
        assert words == launch_module.select_scratch_words(rows, V, torch.bfloat16, k)
    scratch = torch.full((words,), -5, dtype=torch.int32, device=DEVICE)
    out_values = torch.empty((rows, k), dtype=x.dtype, device=DEVICE)
    out_indices = torch.empty((rows, k), dtype=torch.int32, device=DEVICE)
    if copy:  # XLA's copy of the input (an output aliased to it)
        outs, given = (out_values, out_indices, scratch, x.clone()), torch.full_like(x, np.nan)
    else:
        outs, given = (out_values, out_indices, scratch), x
    _jax_jit._gpu_top_k_callback(None, outs, given, k=k, mode="largest", sorted=sorted,
                                 scratch=True)
    assert counting.allocations == []
    assert not arena.active()
    want_v, want_i = oracle.top_k(_host(x), k, sorted=sorted)
    np.testing.assert_array_equal(out_indices.cpu().numpy(), want_i)
    np.testing.assert_array_equal(_host(out_values), want_v)


def test_jit_top_k_scratch_words_refuses_what_the_arena_cannot_hold(monkeypatch):
    """A sorted k above the in-register sort (a torch sort), chunked rows (``torch.cat``) and,
    with ``QRITA_JAX_TOP_K_COPY``, inputs above ``TOP_K_COPY_MAX_BYTES`` keep the plain
    callback: no scratch size for them."""
    from qrita.backends import _jax_jit
    from qrita.backends.triton.one_launch import SORT_MAX

    assert _jax_jit.top_k_scratch_words(4, 4096, np.float32, SORT_MAX, True) > 0
    assert _jax_jit.top_k_scratch_words(4, 4096, np.float32, SORT_MAX + 1, True) is None
    assert _jax_jit.top_k_scratch_words(4, 4096, np.float32, SORT_MAX + 1, False) > 0
    rows = _jax_jit.TOP_K_COPY_MAX_BYTES // (4096 * 4)  # the largest input it copies
    monkeypatch.setenv("QRITA_JAX_TOP_K_COPY", "0")
    assert _jax_jit.top_k_scratch_words(rows + 1, 4096, np.float32, 10, True) > 0  # no copy
    monkeypatch.delenv("QRITA_JAX_TOP_K_COPY")  # the default: copies
    assert _jax_jit.top_k_scratch_words(rows, 4096, np.float32, 10, True) > 0
    assert _jax_jit.top_k_scratch_words(rows + 1, 4096, np.float32, 10, True) is None
    assert _jax_jit.top_k_scratch_words(2 * rows, 4096, np.float16, 10, True) > 0
    monkeypatch.setenv("QRITA_CHUNK_ROWS", "2")
    assert _jax_jit.top_k_scratch_words(4, 4096, np.float32, 10, True) is None


def test_jit_callbacks_take_the_eager_path_when_xla_does_not_record(monkeypatch):
    """Called as it comes (XLA not capturing its stream: e.g. below its minimum graph size),
    the command-buffer callbacks leave the scratch output alone and take the usual eager
    path, with the same answers."""
    import contextlib

    from qrita.backends import _jax_jit
    from qrita.reference import oracle

    monkeypatch.setattr(_jax_jit, "_on_xla_stream", lambda ctx, device: contextlib.nullcontext())
    V = 301
    x_np = _rows(np.random.default_rng(12), V)
    x = torch.from_numpy(x_np).to(DEVICE)
    rows = x.shape[0]
    scratch = torch.full((_jax_jit.top_k_scratch_words(rows, V, np.float32, 7, True),), -5,
                         dtype=torch.int32, device=DEVICE)
    out_values = torch.empty((rows, 7), dtype=x.dtype, device=DEVICE)
    out_indices = torch.empty((rows, 7), dtype=torch.int64, device=DEVICE)
    _jax_jit._gpu_top_k_callback(None, (out_values, out_indices, scratch, x.clone()), x, k=7,
                                 mode="largest", sorted=True, scratch=True)
    want_v, want_i = oracle.top_k(x_np, 7)
    np.testing.assert_array_equal(out_indices.cpu().numpy(), want_i)
    np.testing.assert_array_equal(_host(out_values), want_v)
    mask_scratch = torch.full_like(scratch, -5)
    out = x.clone()
    _jax_jit._gpu_masks_callback(None, (out, mask_scratch), x, k_static=7, p_static=0.8,
                                 has_k=False, has_p=False, fill=float("-inf"), scratch=True)
    compare.assert_mask_matches(_host(out), x_np, 7, 0.8)
    assert bool((scratch == -5).all()) and bool((mask_scratch == -5).all())
    assert not arena.active()


@pytest.mark.parametrize("op", ["sample", "probs", "candidates"])
def test_jit_sampling_callback_reads_the_xla_copies_inside_its_pool(monkeypatch, op):
    """The command-buffer sampling callback (torch CPU tensors standing in for XLA's buffers):
    it reads XLA's copies of the logits and of the per-row arrays (the buffers it is given
    first hold NaN logits and other k / seeds: reading them would change the answer), takes
    its allocations in its site's pool while XLA records, and its results equal the eager
    sampler's on the real inputs."""
    import contextlib

    from qrita.backends import _jax_jit
    from qrita.backends.triton import sampling_ops

    monkeypatch.setattr(_jax_jit, "_on_xla_stream", lambda ctx, device: contextlib.nullcontext())
    scopes = []
    monkeypatch.setattr(_jax_jit._SamplingPools, "scope",
                        lambda self, device: scopes.append(device) or contextlib.nullcontext())
    V, width = 301, 16
    x = torch.from_numpy(_rows(np.random.default_rng(5), V)).to(DEVICE)
    batch = x.shape[0]
    k_rows = torch.tensor([1, 7, 300, 0], dtype=torch.int32, device=DEVICE)
    seeds = torch.tensor([3, 2**31 - 1, 0, 12], dtype=torch.int32, device=DEVICE)
    statics = dict(p=0.9, min_p=None, temperature=0.8, offset=5)
    if op == "sample":
        names, arrays = ("k", "seed"), (k_rows, seeds)
        want = sampling_ops.sample(x, k_rows.long(), 0.9, temperature=0.8, seed=seeds.long(),
                                   offset=5, return_logprob=True)
        outs = (torch.empty(batch, dtype=torch.int32, device=DEVICE),
                torch.empty(batch, dtype=torch.float32, device=DEVICE))
    else:
        statics["seed"] = None
        names, arrays = ("k",), (k_rows,)
        if op == "probs":
            want = (sampling_ops.top_k_top_p_probs(x, k_rows.long(), 0.9, temperature=0.8),)
            outs = (torch.empty((batch, V), dtype=torch.float32, device=DEVICE),)
        else:
            want = tuple(sampling_ops.candidates(x, k_rows.long(), 0.9, temperature=0.8,
                                                 max_candidates=width))
            outs = (torch.empty((batch, width), dtype=torch.int32, device=DEVICE),
                    torch.empty((batch, width), dtype=torch.float32, device=DEVICE),
                    torch.empty(batch, dtype=torch.int32, device=DEVICE))
    given = (torch.full_like(x, np.nan), *(torch.full_like(a, 2) for a in arrays))
    copies = (x.clone(), *(a.clone() for a in arrays))
    _jax_jit._gpu_sampling_callback(None, (*outs, *copies), *given, op=op, names=names,
                                    statics=statics, width=width, logprob=True,
                                    pools=_jax_jit._SamplingPools())
    assert len(scopes) == 1
    for got, expected in zip(outs, want, strict=True):
        np.testing.assert_array_equal(got.cpu().numpy(),
                                      expected.to(got.dtype).cpu().numpy())


def test_jit_sampling_records_only_seeded_calls_of_copyable_size(monkeypatch):
    """``sampling_records``: an unseeded ``sample`` (a fresh host seed per execution) and logits
    above ``SAMPLING_COPY_MAX_BYTES`` keep the plain callback, as does
    ``QRITA_JAX_COMMAND_BUFFER=0``; seeded samples, probabilities and candidates record."""
    from qrita.backends import _jax_jit

    rows = _jax_jit.SAMPLING_COPY_MAX_BYTES // (4096 * 4)
    assert _jax_jit.sampling_records("sample", rows, 4096, np.float32, True)
    assert not _jax_jit.sampling_records("sample", rows, 4096, np.float32, False)
    assert not _jax_jit.sampling_records("sample", rows + 1, 4096, np.float32, True)
    assert _jax_jit.sampling_records("probs", 2 * rows, 4096, np.float16, False)
    assert _jax_jit.sampling_records("candidates", 1, 4096, np.float32, False)
    monkeypatch.setenv("QRITA_JAX_COMMAND_BUFFER", "0")
    assert not _jax_jit.sampling_records("probs", 1, 4096, np.float32, False)


def test_sampling_pools_stay_out_of_the_way_when_xla_does_not_record():
    """Called as it comes (no capture; here a CPU device), the sampler's pool scope is a no-op
    and makes no pool."""
    import contextlib

    from qrita.backends import _jax_jit

    pools = _jax_jit._SamplingPools()
    scope = pools.scope(torch.device("cpu"))
    assert isinstance(scope, contextlib.nullcontext)
    with scope:
        torch.empty(8)
    assert pools._pools == {}
