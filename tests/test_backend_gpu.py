"""GPU adapters end to end: torch, CuPy and JAX (eager and jit) against the oracle, on a CUDA GPU.

Every test is marked ``gpu`` (skipped with a reason without CUDA). Zero-copy is proven by pointers:
the kernel's input is the caller's buffer and the returned array is the kernel's output buffer.
"""

from __future__ import annotations

import os
import warnings

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # let torch and JAX share the GPU

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from qrita.reference import oracle  # noqa: E402

pytestmark = pytest.mark.gpu

B, V = 8, 4096


# ---------------------------------------------------------------------------------------------
# helpers


def _ops_module():
    from qrita.backends.triton import ops as mod

    return mod


@pytest.fixture
def ops():
    """The Triton kernels (the GPU path needs them; without them the API falls back to NumPy)."""
    try:
        from qrita.backends.triton import ops as mod
    except ImportError as exc:
        pytest.skip(f"qrita.backends.triton.ops does not import: {exc}")
    return mod


@pytest.fixture
def calls(monkeypatch, ops):
    """Record every kernel call's input / output pointers and devices."""
    log: list[dict] = []
    real_mask, real_top_k = ops.top_k_top_p_mask, getattr(ops, "top_k", None)

    def mask(t, k, p, *, inplace, fill):
        out = real_mask(t, k, p, inplace=inplace, fill=fill)
        log.append(dict(op="mask", in_ptr=t.data_ptr(), out_ptr=out.data_ptr(), device=t.device))
        return out

    def top_k(t, k, *, mode, sorted):
        vals, idx = real_top_k(t, k, mode=mode, sorted=sorted)
        log.append(
            dict(
                op="top_k",
                in_ptr=t.data_ptr(),
                out_ptr=(vals.data_ptr(), idx.data_ptr()),
                device=t.device,
            )
        )
        return vals, idx

    monkeypatch.setattr(ops, "top_k_top_p_mask", mask)
    if real_top_k is not None:
        monkeypatch.setattr(ops, "top_k", top_k)
    return log


def _logits_np(seed: int, shape=(B, V)) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.normal(0.0, 3.0, size=shape).astype(np.float32)
    a[..., 10] = a[..., 20]  # an exact tie
    return a


def assert_mask_ok(got: np.ndarray, x: np.ndarray, k, p, fill: float = -np.inf) -> None:
    """docs/spec.md rule 5: exact except a top-p boundary entry whose mass-before is within 1e-6
    of p; what is kept must still be a prefix of the order. ``x`` in the input dtype."""
    want = oracle.top_k_top_p_mask(x, k, p, fill=fill)
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    g32, w32 = got.astype(np.float32), want.astype(np.float32)
    same = (g32 == w32) | (np.isnan(g32) & np.isnan(w32))
    if same.all():
        return
    x2 = x.reshape(1, -1) if x.ndim == 1 else x
    g2 = g32.reshape(x2.shape)
    k_rows, p_rows = oracle.row_params(k, p, *x2.shape)
    ordr = oracle.order(x2)
    keep_w = oracle.keep_mask(x2, k, p)
    xf = oracle.as_float64(x2)
    for b in np.nonzero(~same.reshape(x2.shape).all(axis=1))[0]:
        keep_g = g2[b] != fill
        np.testing.assert_array_equal(g2[b][keep_g], x2[b][keep_g].astype(np.float32))
        n_g = int(keep_g.sum())
        assert keep_g[ordr[b, :n_g]].all(), f"row {b}: kept set is not a prefix of the order"
        n_w = int(keep_w[b].sum())
        n_surv = int(k_rows[b]) if k_rows[b] > 0 else x2.shape[1]
        before = oracle.mass_before(xf[b, ordr[b, :n_surv]])
        assert before is not None and not np.isnan(p_rows[b]), f"row {b} differs outside top-p"
        lo, hi = sorted((n_g, n_w))
        assert np.all(np.abs(before[lo:hi] - p_rows[b]) <= 1e-6), (
            f"row {b}: kept {n_g}, oracle {n_w}, outside the 1e-6 margin"
        )


def oracle_input(t) -> np.ndarray:
    """A torch tensor as NumPy in its own dtype (bfloat16 as ml_dtypes.bfloat16)."""
    import torch

    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.float().cpu().numpy().astype(ml_dtypes.bfloat16)
    return t.cpu().numpy()


oracle_output = oracle_input


CASES = [(50, None), (None, 0.9), (100, 0.9), (np.arange(1, B + 1) * 7, None)]


# ---------------------------------------------------------------------------------------------
# torch


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_torch_masks(calls, dtype):
    import torch

    import qrita

    x_np = _logits_np(0)
    x = torch.from_numpy(x_np).to("cuda", getattr(torch, dtype))
    x_host = oracle_input(x)
    for k, p in CASES:
        kk = torch.from_numpy(k).cuda() if isinstance(k, np.ndarray) else k
        out = qrita.top_k_top_p_mask(x, kk, p)
        assert isinstance(out, torch.Tensor) and out.dtype == x.dtype and out.device == x.device
        assert_mask_ok(oracle_output(out), x_host, k, p)
        assert calls[-1]["in_ptr"] == x.data_ptr()  # the kernel read the caller's buffer
        assert calls[-1]["out_ptr"] == out.data_ptr()


def test_torch_top_k(calls):
    if not hasattr(_ops_module(), "top_k"):
        pytest.skip("qrita.backends.triton.ops has no top_k kernel yet")
    import torch

    import qrita

    x = torch.from_numpy(_logits_np(1)).cuda()
    v, i = qrita.top_k(x, 64)
    ov, oi = oracle.top_k(x.cpu().numpy(), 64)
    np.testing.assert_array_equal(v.cpu().numpy(), ov)
    np.testing.assert_array_equal(i.cpu().numpy(), oi)
    assert i.dtype == torch.int64
    assert calls[-1]["in_ptr"] == x.data_ptr()


def test_torch_on_second_gpu(calls):
    import torch

    import qrita

    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    x = torch.from_numpy(_logits_np(2)).to("cuda:1")
    out = qrita.top_k_mask(x, 5)
    assert out.device == x.device
    assert calls[-1]["device"] == x.device
    assert_mask_ok(out.cpu().numpy(), x.cpu().numpy(), 5, None)


@pytest.mark.parametrize("batch", [1, 64])
def test_torch_second_gpu_matches_the_first_call_after_call(batch):
    """Every op on cuda:1 with torch's current device 0, alternating with the same calls on
    cuda:0 (the per-device caches: eager graphs, kept scratch, launch sites): each result lives
    on its input's device and is bit-identical to the cuda:0 result; masks and ``top_k`` equal
    the oracle; the sampler's tokens and probabilities match across the two GPUs."""
    import torch

    import qrita

    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    x_np = _logits_np(40, (batch, 131072 if batch == 1 else V))
    k_np = np.arange(1, batch + 1, dtype=np.int64) * 3

    def run(x):
        k_rows = torch.from_numpy(k_np).to(x.device)
        values, indices = qrita.top_k(x, 50)
        tok, lp = qrita.sample(x, k=k_rows, p=0.9, seed=11, offset=3, return_logprob=True)
        return dict(topk50=qrita.top_k_mask(x, 50), topp=qrita.top_p_mask(x, 0.9),
                    both=qrita.top_k_top_p_mask(x, k_rows, 0.8), values=values,
                    indices=indices, tokens=tok, logprobs=lp,
                    unseeded=qrita.sample(x, p=0.5),
                    probs=qrita.top_k_top_p_probs(x, 20, 0.9, temperature=0.7))

    torch.cuda.set_device(0)
    first = None
    for rep in range(3):
        for index in (0, 1, 1, 0):
            x = torch.from_numpy(x_np).to(f"cuda:{index}")
            got = run(x)
            for name, out in got.items():
                assert out.device == x.device, name
            host = {name: out.cpu() for name, out in got.items()}
            assert torch.cuda.current_device() == 0  # the call put it back
            if first is None:
                first = host
                assert_mask_ok(host["topk50"].numpy(), x_np, 50, None)
                assert_mask_ok(host["topp"].numpy(), x_np, None, 0.9)
                assert_mask_ok(host["both"].numpy(), x_np, k_np, 0.8)
                ov, oi = oracle.top_k(x_np, 50)
                np.testing.assert_array_equal(host["indices"].numpy(), oi)
                np.testing.assert_array_equal(host["values"].numpy(), ov)
                continue
            for name, out in host.items():
                if name != "unseeded":
                    assert torch.equal(out, first[name]), (rep, index, name)
            assert bool(((host["unseeded"] >= 0) & (host["unseeded"] < x_np.shape[1])).all())


# ---------------------------------------------------------------------------------------------
# CuPy


def _cupy():
    cupy = pytest.importorskip("cupy")
    if cupy.cuda.runtime.getDeviceCount() == 0:
        pytest.skip("cupy sees no CUDA device")
    return cupy


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_cupy_masks_zero_copy(calls, dtype):
    cupy = _cupy()
    import qrita

    x_np = _logits_np(3).astype(dtype)
    x = cupy.asarray(x_np)
    for k, p in CASES:
        kk = cupy.asarray(k) if isinstance(k, np.ndarray) else k
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            out = qrita.top_k_top_p_mask(x, kk, p)
        # CuPy's deprecated toDlpack / fromDlpack are not used (they warn on every call)
        assert not [w for w in seen if "deprecated" in str(w.message).lower()
                    and "dlpack" in str(w.message).lower()]
        assert isinstance(out, cupy.ndarray) and out.dtype == x.dtype
        assert out.device.id == x.device.id
        assert_mask_ok(cupy.asnumpy(out), x_np, k, p)
        assert calls[-1]["in_ptr"] == x.data.ptr
        assert calls[-1]["out_ptr"] == out.data.ptr
    # the exchange went the direct way (no stream handshake), not the public fallback
    from qrita.backends import _cupy as cupy_adapter

    assert cupy_adapter._direct_exchange() is not None and cupy_adapter._DIRECT["ok"]


def test_cupy_top_k(calls):
    if not hasattr(_ops_module(), "top_k"):
        pytest.skip("qrita.backends.triton.ops has no top_k kernel yet")
    cupy = _cupy()
    import qrita

    x_np = _logits_np(4)
    x = cupy.asarray(x_np)
    v, i = qrita.top_k(x, 33, mode="smallest")
    ov, oi = oracle.top_k(x_np, 33, mode="smallest")
    np.testing.assert_array_equal(cupy.asnumpy(v), ov)
    np.testing.assert_array_equal(cupy.asnumpy(i), oi)
    assert calls[-1]["in_ptr"] == x.data.ptr


def test_cupy_inplace_writes_the_callers_buffer(calls):
    cupy = _cupy()
    import qrita

    x_np = _logits_np(5)
    x = cupy.asarray(x_np)
    out = qrita.top_k_mask(x, 9, inplace=True)
    assert out is x
    assert_mask_ok(cupy.asnumpy(x), x_np, 9, None)


def test_cupy_non_default_stream_ordering(calls):
    """Input written on a non-default CuPy stream, no synchronisation: the kernel must see it."""
    cupy = _cupy()
    import qrita

    x_np = _logits_np(6, (64, 32768))
    src = cupy.asarray(x_np)
    cupy.cuda.Device().synchronize()
    big = cupy.ones((4096, 4096), cupy.float32)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        x = cupy.zeros_like(src)
        for _ in range(20):  # keep the stream busy so that a kernel on another stream would race
            big = big @ big * (1.0 / 4096)
        x[...] = src
        out = qrita.top_k_top_p_mask(x, 20, 0.8)
        got = out.copy()  # ordered after the kernel on the same stream
    stream.synchronize()
    assert_mask_ok(cupy.asnumpy(got), x_np, 20, 0.8)


def test_cupy_on_second_gpu(calls):
    cupy = _cupy()
    import qrita

    if cupy.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs")
    x_np = _logits_np(7)
    with cupy.cuda.Device(1):
        x = cupy.asarray(x_np)
    out = qrita.top_k_mask(x, 5)  # current device is 0: the array's device must win
    assert out.device.id == 1
    assert calls[-1]["device"].index == 1
    assert_mask_ok(cupy.asnumpy(out), x_np, 5, None)


# ---------------------------------------------------------------------------------------------
# JAX


def _jax():
    jax = pytest.importorskip("jax")
    try:
        gpus = jax.devices("cuda")
    except RuntimeError:
        gpus = []
    if not gpus:
        pytest.skip("JAX has no CUDA backend here")
    return jax, gpus


@pytest.fixture
def by_exchange(monkeypatch):
    """Eager JAX calls by the DLPack exchanges every time (``QRITA_JAX_EAGER_JIT=0``): the tests
    of the exchanges themselves (zero-copy pointers, devices)."""
    from qrita.backends import _jax as jax_adapter

    monkeypatch.setattr(jax_adapter, "EAGER_JIT", False)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_jax_eager_masks_zero_copy(calls, dtype, by_exchange):
    jax, gpus = _jax()
    import jax.numpy as jnp

    import qrita

    x = jax.device_put(jnp.asarray(_logits_np(8), dtype=dtype), gpus[0])
    x_host = np.asarray(x)
    for k, p in CASES:
        kk = jax.device_put(jnp.asarray(k), gpus[0]) if isinstance(k, np.ndarray) else k
        out = qrita.top_k_top_p_mask(x, kk, p)
        assert isinstance(out, jax.Array) and out.dtype == x.dtype
        assert out.devices() == x.devices()
        assert_mask_ok(np.asarray(out), x_host, k, p)
        assert calls[-1]["in_ptr"] == x.unsafe_buffer_pointer()
        assert calls[-1]["out_ptr"] == out.unsafe_buffer_pointer()
    np.testing.assert_array_equal(np.asarray(x), x_host)  # never written


def test_jax_eager_top_k(calls, by_exchange):
    if not hasattr(_ops_module(), "top_k"):
        pytest.skip("qrita.backends.triton.ops has no top_k kernel yet")
    jax, gpus = _jax()

    import qrita
    from qrita.backends import _jax as jax_adapter

    x_np = _logits_np(9)
    x = jax.device_put(x_np, gpus[0])
    v, i = qrita.top_k(x, 17)
    ov, oi = oracle.top_k(x_np, 17)
    np.testing.assert_array_equal(np.asarray(v), ov)
    np.testing.assert_array_equal(np.asarray(i), oi)
    assert i.dtype == jax_adapter.index_dtype()
    assert calls[-1]["in_ptr"] == x.unsafe_buffer_pointer()
    assert v.unsafe_buffer_pointer() == calls[-1]["out_ptr"][0]


@pytest.mark.parametrize("eager_jit", [False, True])
def test_jax_eager_orders_the_streams_both_ways(monkeypatch, eager_jit):
    """No host synchronisation, and still ordered: (1) the input is the output of a JAX program
    still running when the call starts (torch's stream must wait for it); (2) torch's stream is
    held back by a GPU sleep before the call, and JAX reads the result right after it (JAX's
    stream must wait for the kernel). Each round scales the logits by another power of two, so
    a read of stale memory (the previous round's buffers) gives wrong values. ``eager_jit``:
    from each key's second call, the cached jitted program (``QRITA_JAX_EAGER_JIT``)."""
    jax, gpus = _jax()
    import jax.numpy as jnp
    import torch

    import qrita
    from qrita.backends import _jax as jax_adapter

    monkeypatch.setattr(jax_adapter, "EAGER_JIT", eager_jit)
    jax_adapter._SEEN.clear()

    x_np = _logits_np(16)
    eye = jax.device_put(np.eye(2048, dtype=np.float32), gpus[0])
    x_dev = jax.device_put(x_np, gpus[0])

    @jax.jit
    def slow_scale(x, eye, scale):
        y = eye
        for _ in range(24):  # milliseconds of GPU time; y stays the identity exactly
            y = y @ eye
        return x * (y[0, 0] * scale)

    jax.block_until_ready(slow_scale(x_dev, eye, jnp.float32(1.0)))
    for r in range(4):
        scale = 2.0 ** (r - 1)
        want_x = x_np * np.float32(scale)
        x = slow_scale(x_dev, eye, jnp.float32(scale))  # still running
        out = qrita.top_k_top_p_mask(x, 5, 0.9)
        assert_mask_ok(np.asarray(out), want_x, 5, 0.9)
        v, i = qrita.top_k(x, 7)
        ov, oi = oracle.top_k(want_x, 7)
        np.testing.assert_array_equal(np.asarray(v), ov)
        np.testing.assert_array_equal(np.asarray(i), oi)

        jax.block_until_ready(x)
        torch.cuda._sleep(4_000_000)  # about 2 ms on torch's stream before the kernels
        out = qrita.top_k_top_p_mask(x, 5, 0.9)
        doubled = np.asarray(out * 2)  # a JAX program on the result, queued at once
        assert_mask_ok(doubled / 2, want_x, 5, 0.9)
        torch.cuda._sleep(4_000_000)
        v, i = qrita.top_k(x, 7)
        np.testing.assert_array_equal(np.asarray(i + 0), oi)
        np.testing.assert_array_equal(np.asarray(v * 1), ov)


def test_jax_inplace_is_an_error():
    jax, gpus = _jax()
    import qrita

    x = jax.device_put(_logits_np(10), gpus[0])
    with pytest.raises(ValueError, match="inplace"):
        qrita.top_k_mask(x, 3, inplace=True)


def test_jax_on_second_gpu(calls, by_exchange):
    jax, gpus = _jax()
    import qrita

    if len(gpus) < 2:
        pytest.skip("needs two GPUs")
    x_np = _logits_np(11)
    x = jax.device_put(x_np, gpus[1])
    out = qrita.top_k_mask(x, 5)
    assert out.devices() == x.devices()
    assert calls[-1]["device"].index == 1
    assert_mask_ok(np.asarray(out), x_np, 5, None)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_jax_jit_runs_the_kernel_on_the_device(monkeypatch, ops, dtype):
    jax, gpus = _jax()
    import jax.numpy as jnp

    import qrita
    from qrita.backends import _jax_jit

    device_calls, host_calls = [], []
    real_device, real_host = _jax_jit._device_masks, _jax_jit._host_masks

    def device_masks(t, k, p, fill):
        device_calls.append(t.device)
        return real_device(t, k, p, fill)

    def host_masks(*args, **kwargs):
        host_calls.append(1)
        return real_host(*args, **kwargs)

    monkeypatch.setattr(_jax_jit, "_device_masks", device_masks)
    monkeypatch.setattr(_jax_jit, "_host_masks", host_masks)

    x = jax.device_put(jnp.asarray(_logits_np(12), dtype=dtype), gpus[0])
    x_host = np.asarray(x)
    k = jax.device_put(jnp.arange(1, B + 1, dtype=jnp.int32) * 5, gpus[0])
    out = jax.jit(lambda x, k: qrita.top_k_top_p_mask(x, k, 0.9))(x, k)
    assert isinstance(out, jax.Array) and out.dtype == x.dtype and out.devices() == x.devices()
    assert_mask_ok(np.asarray(out), x_host, np.asarray(k), 0.9)
    assert device_calls and not host_calls  # the buffer callback ran, not the host callback
    np.testing.assert_array_equal(np.asarray(x), x_host)  # the aliased input was not written

    out = jax.jit(lambda x: qrita.top_k_mask(x, 5))(x)
    assert_mask_ok(np.asarray(out), x_host, 5, None)


@pytest.mark.parametrize("command_buffer", ["1", "0"])
@pytest.mark.parametrize("k_kind", ["scalar", "rows"])
def test_jax_jit_command_buffer_masks_replay_exactly(monkeypatch, ops, k_kind, command_buffer):
    """``QRITA_JAX_COMMAND_BUFFER`` (default 1): the jitted masks' callback is command-buffer
    compatible and takes its scratch from an XLA output. Run many times (new inputs and the
    same ones, in a program with more operations around it) every mask equals the oracle's.
    Whether XLA recorded it depends on its flags (``--xla_gpu_graph_min_graph_size``); the
    answers must not. A scalar k is static (a traced 0-d k is refused: per-row k is (B,))."""
    jax, gpus = _jax()
    import jax.numpy as jnp

    import qrita

    monkeypatch.setenv("QRITA_JAX_COMMAND_BUFFER", command_buffer)
    rng = np.random.default_rng(17)
    k = 20 if k_kind == "scalar" else jax.device_put(
        jnp.asarray(rng.integers(1, 200, size=B), dtype=jnp.int32), gpus[0])

    def body(x, k):
        y = x * 1.0 + 0.0
        masked = qrita.top_k_top_p_mask(y, k, 0.9)
        return jnp.where(jnp.isfinite(masked), masked, -jnp.inf) * 1.0

    step = jax.jit(body, static_argnums=(1,) if k_kind == "scalar" else ())
    inputs = [_logits_np(30 + i) for i in range(3)]
    for rep in range(12):
        x_np = inputs[rep % 3] * np.float32(1 + rep // 3)
        x = jax.device_put(x_np, gpus[0])
        out = np.asarray(step(x, k))
        assert_mask_ok(out, x_np, np.asarray(k) if k_kind == "rows" else k, 0.9)


@pytest.mark.parametrize(("command_buffer", "copy"), [("1", "0"), ("0", "0"), ("1", "1")])
@pytest.mark.parametrize(("k", "sorted", "dtype"), [
    (1, True, "float32"), (50, True, "bfloat16"), (50, False, "float16"),
    (1024, True, "float32"), (1500, True, "float32"), (1500, False, "bfloat16")])
def test_jax_jit_command_buffer_top_k_replays_exactly(monkeypatch, ops, k, sorted, dtype,
                                                      command_buffer, copy):
    """The jitted ``top_k`` with ``QRITA_JAX_COMMAND_BUFFER`` on and off (and on with
    ``QRITA_JAX_TOP_K_COPY``: the kernels read XLA's copy of the input): its selection and
    scratch from an XLA output where the call allows (sorted up to ``SORT_MAX`` = 1024; a
    larger sorted k keeps the plain callback), inside a program with more operations, run
    over new and repeated inputs: values and indices equal the oracle's every time."""
    jax, gpus = _jax()
    import jax.numpy as jnp

    import qrita

    monkeypatch.setenv("QRITA_JAX_COMMAND_BUFFER", command_buffer)
    monkeypatch.setenv("QRITA_JAX_TOP_K_COPY", copy)

    @jax.jit
    def step(x):
        values, indices = qrita.top_k(x * 1 + 0, k, sorted=sorted)
        return values * 1, indices + 0

    inputs = [_logits_np(60 + i) for i in range(3)]
    for rep in range(9):
        x_np = (inputs[rep % 3] * np.float32(1 + rep // 3)).astype(jnp.dtype(dtype))
        values, indices = step(jax.device_put(x_np, gpus[0]))
        # the oracle on the exact float32 copy (same order, same values)
        want_v, want_i = oracle.top_k(x_np.astype(np.float32), k, sorted=sorted)
        assert values.dtype == x_np.dtype
        np.testing.assert_array_equal(np.asarray(indices), want_i)
        np.testing.assert_array_equal(np.asarray(values).astype(np.float32), want_v)


@pytest.mark.parametrize(("command_buffer", "copy"), [("1", "0"), ("1", "1"), ("0", "0")])
def test_jax_eager_by_jit_matches_the_oracle(monkeypatch, ops, command_buffer, copy):
    """``QRITA_JAX_EAGER_JIT`` (``_jax.EAGER_JIT``, default on): eager masks and ``top_k`` of GPU
    arrays run a cached jitted program from a key's second call (the first takes the DLPack
    exchanges), exact for scalar and per-row k / p, new and repeated inputs, with command
    buffers on and off."""
    jax, gpus = _jax()
    import jax.numpy as jnp

    import qrita
    from qrita.backends import _jax as jax_adapter

    monkeypatch.setenv("QRITA_JAX_COMMAND_BUFFER", command_buffer)
    monkeypatch.setenv("QRITA_JAX_TOP_K_COPY", copy)
    monkeypatch.setattr(jax_adapter, "EAGER_JIT", True)
    jax_adapter._jitted_masks.cache_clear()
    jax_adapter._jitted_top_k.cache_clear()
    jax_adapter._SEEN.clear()
    exchanges = []
    real_to_torch = jax_adapter.to_torch
    monkeypatch.setattr(jax_adapter, "to_torch",
                        lambda *a, **kw: exchanges.append(1) or real_to_torch(*a, **kw))
    k_rows = jax.device_put(jnp.asarray([1, 5, 4096, 0, 30, 2, 100, 7], dtype=jnp.int32), gpus[0])
    for rep in range(6):
        x_np = _logits_np(80 + rep % 2) * np.float32(1 + rep // 2)
        x = jax.device_put(x_np, gpus[0])
        assert_mask_ok(np.asarray(qrita.top_k_top_p_mask(x, 20, 0.9)), x_np, 20, 0.9)
        assert_mask_ok(np.asarray(qrita.top_k_mask(x, k_rows)), x_np, np.asarray(k_rows), None)
        values, indices = qrita.top_k(x, 50)
        want_v, want_i = oracle.top_k(x_np, 50)
        np.testing.assert_array_equal(np.asarray(indices), want_i)
        np.testing.assert_array_equal(np.asarray(values), want_v)
    assert jax_adapter._jitted_masks.cache_info().misses == 2
    assert jax_adapter._jitted_masks.cache_info().hits == 2 * 5 - 2
    # each mask key's first call (the per-row k crosses too); top_k by jit only with the copy
    assert len(exchanges) == 3 + (1 if copy == "1" else 6)


@pytest.mark.parametrize("command_buffer", ["1", "0"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_jax_jit_command_buffer_sampler_replays_exactly(monkeypatch, ops, dtype, command_buffer):
    """The jitted sampler with ``QRITA_JAX_COMMAND_BUFFER`` on (compiled at minimum graph size
    1, so XLA records it; ``_jax_jit.sampling_records``) and off: ``sample`` with per-row k and
    seeds as operands (new seeds every call) and with a static k and seed, ``probs`` and
    ``candidates``, inside a program with more operations, over new and repeated inputs: every
    output equals the eager call's on the same inputs (the sampler's tests hold those to the
    reference). An unseeded ``sample`` keeps drawing fresh seeds (it is never recorded)."""
    jax, gpus = _jax()
    import jax.numpy as jnp

    import qrita
    from qrita.backends import _jax as jax_adapter

    monkeypatch.setenv("QRITA_JAX_COMMAND_BUFFER", command_buffer)
    monkeypatch.setattr(jax_adapter, "EAGER_JIT", False)  # the eager calls: the exchanges
    t = dict(temperature=0.8)
    k_rows = jax.device_put(jnp.asarray([1, 5, 50, 0, 30, 2, 4096, 7], dtype=jnp.int32), gpus[0])

    def body(x, k, seed):
        y = x * 1 + 0
        tok, lp = qrita.sample(y, k=k, p=0.9, seed=seed, offset=3, return_logprob=True, **t)
        tok_static = qrita.sample(y, k=20, p=0.9, seed=11, **t)
        probs = qrita.top_k_top_p_probs(y, k, 0.9, **t)
        c = qrita.candidates(y, k, 0.9, max_candidates=64, **t)
        return tok + 0, lp * 1, tok_static, probs * 1, c.indices, c.probs, c.counts

    step = jax_adapter._jit(body)
    inputs = [_logits_np(90 + i) for i in range(3)]
    for rep in range(9):
        x_np = (inputs[rep % 3] * np.float32(1 + rep // 3)).astype(jnp.dtype(dtype))
        x = jax.device_put(x_np, gpus[0])
        seeds = jax.device_put(jnp.arange(B, dtype=jnp.int32) * 7 + rep, gpus[0])
        got = step(x, k_rows, seeds)
        c = qrita.candidates(x, k_rows, 0.9, max_candidates=64, **t)
        want = (*qrita.sample(x, k=k_rows, p=0.9, seed=seeds, offset=3, return_logprob=True, **t),
                qrita.sample(x, k=20, p=0.9, seed=11, **t),
                qrita.top_k_top_p_probs(x, k_rows, 0.9, **t), c.indices, c.probs, c.counts)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))

    flat = jax.device_put(jnp.zeros((B, V), dtype=dtype), gpus[0])  # uniform over V
    unseeded = jax_adapter._jit(lambda x: qrita.sample(x * 1 + 0, p=1.0))
    draws = [np.asarray(unseeded(flat)) for _ in range(3)]
    assert not (np.array_equal(draws[0], draws[1]) and np.array_equal(draws[1], draws[2]))


@pytest.mark.parametrize("command_buffer", ["1", "0"])
def test_jax_eager_sampling_by_jit_matches_the_exchanges(monkeypatch, ops, command_buffer):
    """``QRITA_JAX_EAGER_JIT``: eager seeded ``sample`` (per-row and scalar seeds and offsets,
    new values every call), ``top_k_top_p_probs`` and ``candidates`` on JAX GPU arrays run a
    cached jitted program from a key's second call; every output equals the DLPack exchanges'
    on the same inputs. Int seeds / offsets below 2**31 are operands from a value's second call.
    An unseeded ``sample`` runs by jit from its key's second call with seeds and an offset kept
    on the device, and draws what the exchanges draw with those seeds and offsets."""
    jax, gpus = _jax()
    import jax.numpy as jnp

    import qrita
    from qrita.backends import _jax as jax_adapter

    monkeypatch.setenv("QRITA_JAX_COMMAND_BUFFER", command_buffer)
    jax_adapter._jitted_sampling.cache_clear()
    jax_adapter._SEEN.clear()
    k_rows = jax.device_put(jnp.asarray([1, 5, 50, 0, 30, 2, 4096, 7], dtype=jnp.int32), gpus[0])

    def calls(x, rep):
        seeds = jax.device_put(jnp.arange(B, dtype=jnp.int32) * 3 + rep, gpus[0])
        c = qrita.candidates(x, k_rows, 0.9, temperature=0.8, max_candidates=32)
        # seeds / offsets as ints repeat (a value's first call takes the exchanges)
        return (*qrita.sample(x, k=k_rows, p=0.9, seed=seeds, offset=rep % 2,
                              return_logprob=True),
                qrita.sample(x, k=20, p=0.95, temperature=0.5, seed=rep % 3, offset=2**40),
                qrita.sample(x, p=0.9, seed=2**63 + rep),
                qrita.top_k_top_p_probs(x, k_rows, 0.9, temperature=0.8),
                c.indices, c.probs, c.counts)

    for rep in range(6):
        x = jax.device_put(_logits_np(110 + rep % 2) * np.float32(1 + rep // 2), gpus[0])
        monkeypatch.setattr(jax_adapter, "EAGER_JIT", True)
        got = calls(x, rep)
        monkeypatch.setattr(jax_adapter, "EAGER_JIT", False)
        want = calls(x, rep)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    assert jax_adapter._jitted_sampling.cache_info().currsize >= 4  # the calls did run by jit
    # unseeded: by jit from the key's second call, drawing with the per-row seeds and the
    # offset kept on the device (``_jax._FreshDraws``), which the program advances
    monkeypatch.setattr(jax_adapter, "EAGER_JIT", True)
    monkeypatch.setenv("QRITA_JAX_EAGER_UNSEEDED", "1")  # opt-in until this test has passed
    jax_adapter._FRESH.clear()
    before = jax_adapter._jitted_sampling.cache_info().misses
    qrita.sample(x, k=k_rows, p=0.9)  # the key's first call: the exchanges
    for call in range(3):
        monkeypatch.setattr(jax_adapter, "EAGER_JIT", True)
        got = qrita.sample(x, k=k_rows, p=0.9)
        seeds, offset = jax_adapter._FRESH._state[(gpus[0], B)]
        assert int(offset) == call + 1
        monkeypatch.setattr(jax_adapter, "EAGER_JIT", False)
        want = qrita.sample(x, k=k_rows, p=0.9, seed=seeds, offset=call)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert jax_adapter._jitted_sampling.cache_info().misses == before + 1


def test_jax_jit_top_k(ops):
    jax, gpus = _jax()

    import qrita

    x_np = _logits_np(13)
    x = jax.device_put(x_np, gpus[0])
    v, i = jax.jit(lambda x: tuple(qrita.top_k(x, 8, axis=0)))(x)
    ov, oi = oracle.top_k(x_np, 8, axis=0)
    np.testing.assert_array_equal(np.asarray(v), ov)
    np.testing.assert_array_equal(np.asarray(i), oi)


def test_jax_jit_under_vmap(ops):
    jax, gpus = _jax()

    import qrita

    x_np = _logits_np(14, (4, 2, 512))
    x = jax.device_put(x_np, gpus[0])
    out = jax.jit(jax.vmap(lambda r: qrita.top_k_mask(r, 3)))(x)
    for b in range(4):
        assert_mask_ok(np.asarray(out)[b], x_np[b], 3, None)


@pytest.mark.parametrize("command_buffer", ["1", "0"])
def test_jax_jit_sampler_under_vmap(monkeypatch, ops, command_buffer):
    """A seeded ``sample`` and ``candidates`` mapped over a leading axis inside ``jax.jit``
    (the callback runs once per mapped slice, ``vmap_method="sequential"``), with command
    buffers on (compiled at minimum graph size 1) and off: each slice equals the eager call."""
    jax, gpus = _jax()
    import jax.numpy as jnp

    import qrita
    from qrita.backends import _jax as jax_adapter

    monkeypatch.setenv("QRITA_JAX_COMMAND_BUFFER", command_buffer)
    monkeypatch.setattr(jax_adapter, "EAGER_JIT", False)
    x_np = _logits_np(15, (3, 2, 512))
    seeds = jax.device_put(jnp.arange(6, dtype=jnp.int32).reshape(3, 2) + 40, gpus[0])

    def one(x, s):
        tok, lp = qrita.sample(x, k=30, p=0.9, seed=s, return_logprob=True)
        c = qrita.candidates(x, 30, 0.9, max_candidates=16)
        return tok, lp, c.indices, c.probs, c.counts

    step = jax_adapter._jit(jax.vmap(one))
    for rep in range(3):
        x = jax.device_put(x_np * np.float32(1 + rep), gpus[0])
        got = step(x, seeds)
        for b in range(3):
            want = one(x[b], seeds[b])
            for g, w in zip(got, want, strict=True):
                np.testing.assert_array_equal(np.asarray(g)[b], np.asarray(w))


def test_jax_jit_sampler_runs_on_the_device(count_calls, ops):
    """qrita.sample / top_k_top_p_probs / candidates inside jax.jit on a GPU array: the Triton
    sampler through buffer_callback (never the host callback), the same tokens and distribution
    as the eager GPU call."""
    jax, gpus = _jax()
    import jax.numpy as jnp

    import qrita
    from qrita.backends import _jax_jit

    host_calls = count_calls(_jax_jit, "_host_sampling")
    x = jax.device_put(jnp.asarray(_logits_np(15)), gpus[0])
    seeds = jax.device_put(jnp.arange(B, dtype=jnp.int32) + 3, gpus[0])
    kw = dict(k=50, p=0.9, temperature=0.8)

    @jax.jit
    def staged(x, seed):
        tok, lp = qrita.sample(x, seed=seed, offset=2, return_logprob=True, **kw)
        probs = qrita.top_k_top_p_probs(x, 50, 0.9, temperature=0.8)
        c = qrita.candidates(x, 50, 0.9, temperature=0.8, max_candidates=64)
        return tok, lp, probs, c.counts

    tok, lp, probs, counts = staged(x, seeds)
    want_tok, want_lp = qrita.sample(x, seed=seeds, offset=2, return_logprob=True, **kw)
    assert tok.devices() == x.devices() and not host_calls
    np.testing.assert_array_equal(np.asarray(tok), np.asarray(want_tok))
    np.testing.assert_array_equal(np.asarray(lp), np.asarray(want_lp))
    np.testing.assert_array_equal(np.asarray(probs),
                                  np.asarray(qrita.top_k_top_p_probs(x, 50, 0.9, temperature=0.8)))
    np.testing.assert_array_equal(np.asarray(counts), np.asarray(
        qrita.candidates(x, 50, 0.9, temperature=0.8, max_candidates=64).counts))
