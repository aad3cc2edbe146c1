"""qrita/backends/triton/fastlaunch.py: ``launch(kernel, grid, ...)`` against ``kernel[grid](...)``.

On a CPU-only machine: the key against Triton's own specialization, the whole fast path against
``JITFunction.run`` with a stand-in driver and compiler (no GPU: what reaches the compiled
kernel's launcher is recorded and compared), and the interpreter fallback. On a GPU (``gpu``
marker): outputs of a real kernel compared bit for bit over several specializations, CUDA-graph
capture, and the current device.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import random

import pytest
from _triton_env import INTERPRET, ON_GPU, torch, triton  # first: sets up triton
from triton import language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import CompiledKernel  # noqa: E402
from triton.runtime import jit as triton_jit  # noqa: E402
from triton.runtime.driver import driver as triton_driver  # noqa: E402

from qrita.backends.triton import fastlaunch  # noqa: E402
from qrita.backends.triton.fastlaunch import (  # noqa: E402
    fast_path_active,
    launch,
    specialization_key,
)


def _probe(x_ptr, out_ptr, n, one, sixteen, other, big, scale, flag,
           BLOCK: tl.constexpr, MODE: tl.constexpr = 0):
    """A pointer, ints (== 1, % 16, other, > 2**31), a float, a bool and constexprs."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    ints = one * 3 + sixteen + other * 5 + big % 1000
    y = x * scale + ints.to(tl.float32)
    if flag:
        y = -y
    if MODE == 1:
        y = y * 2.0
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


probe = triton.jit(_probe)  # compiled on a GPU, interpreted under TRITON_INTERPRET=1


def _jit_function(do_not_specialize=()):
    """A fresh compiled-mode kernel whatever TRITON_INTERPRET says (never launched for real)."""
    return triton_jit.JITFunction(_probe, do_not_specialize=list(do_not_specialize))


def _tensors():
    base32 = torch.zeros(64, dtype=torch.float32)
    base16 = torch.zeros(64, dtype=torch.float16)
    return {"f32": base32[:32], "f32_off4": base32[1:33], "f32_off16": base32[4:36],
            "f16": base16[:32], "f16_off2": base16[1:33], "none": None}


# ------------------------------------------------------------------------------ the key
def _key(kernel, x, n=100, one=1, sixteen=16, other=7, big=2**31 + 5, scale=1.5, flag=False,
         **kw):
    kw.setdefault("BLOCK", 64)
    return specialization_key(kernel, x, x, n, one, sixteen, other, big, scale, flag, **kw)


@pytest.mark.parametrize("a,b", [
    ({"x": "f32"}, {"x": "f32_off4"}),                  # 16-byte alignment
    ({"x": "f32"}, {"x": "f16"}),                       # dtype
    ({"x": "f32"}, {"x": "none"}),                      # None
    ({"other": 1}, {"other": 2}),                       # == 1
    ({"other": 16}, {"other": 17}),                     # % 16
    ({"other": 7}, {"other": 2**31 + 7}),               # i32 / i64
    ({"other": -2**31}, {"other": -2**31 - 16}),        # i32 / i64, negative
    ({"other": 2**62 + 16}, {"other": 2**63 + 16}),     # i64 / u64
    ({"other": 1}, {"other": True}),                    # int / bool
    ({"other": 2}, {"other": 2.0}),                     # int / float
    ({"BLOCK": 64}, {"BLOCK": 128}),                    # constexpr value
    ({"BLOCK": 1}, {"BLOCK": True}),                    # constexpr 1 / True
    ({"BLOCK": 1}, {"BLOCK": 1.0}),                     # constexpr 1 / 1.0
    ({"BLOCK": 0.0}, {"BLOCK": -0.0}),                  # constexpr 0.0 / -0.0
    ({"MODE": 0}, {"MODE": 1}),                         # constexpr with a default
    ({}, {"num_warps": 8}),                             # launch option
    ({"num_warps": 4}, {"num_warps": 8}),
    ({"num_warps": 4}, {"num_stages": 4}),
])
def test_key_differs(a, b):
    kernel = _jit_function()
    ta = _tensors()
    ka = _key(kernel, ta[a.pop("x", "f32")], **a)
    kb = _key(kernel, ta[b.pop("x", "f32")], **b)
    assert ka is not None and kb is not None
    assert ka != kb


@pytest.mark.parametrize("a,b", [
    ({"x": "f32"}, {"x": "f32_off16"}),                 # both aligned
    ({"other": 7}, {"other": 9}),                       # i32, not % 16
    ({"other": 16}, {"other": -32}),                    # i32, % 16
    ({"other": 2**31}, {"other": 2**40}),               # i64, % 16
    ({"other": 2**63 + 1}, {"other": 2**64 - 1}),       # u64
    ({"scale": 1.5}, {"scale": -3.0}),                  # floats are not specialized
    ({"flag": True}, {"flag": False}),                  # nor bools
    ({"n": 100, "BLOCK": 64}, {"n": 300, "BLOCK": 64}),
])
def test_key_equal(a, b):
    kernel = _jit_function()
    ta = _tensors()
    ka = _key(kernel, ta[a.pop("x", "f32")], **a)
    kb = _key(kernel, ta[b.pop("x", "f32")], **b)
    assert ka is not None and ka == kb


def test_key_of_unspecialized_ints_is_their_type():
    """A ``do_not_specialize`` int is keyed on i32 / i64 / u64 only (as Triton keys it): the
    sampler's seeds, offsets and float64 bit patterns take one compiled kernel per type."""
    kernel = _jit_function(["other"])
    x = _tensors()["f32"]
    assert len({_key(kernel, x, other=v) for v in (0, 1, 2, 16, 17, -5, 2**31 - 1)}) == 1
    assert len({_key(kernel, x, other=v) for v in (2**31, 2**40, 2**40 + 3, -2**40)}) == 1
    assert len({_key(kernel, x, other=v) for v in (2**63, 2**63 + 5, 2**64 - 16)}) == 1
    assert len({_key(kernel, x, other=v) for v in (1, 2**40, 2**63)}) == 3
    assert _key(kernel, x, one=1) != _key(kernel, x, one=2)  # the others stay specialized


def test_key_binds_like_triton():
    """Positional or keyword, default given or not: the same call, the same key."""
    kernel = _jit_function()
    x = _tensors()["f32"]
    args = (x, x, 100, 1, 16, 7, 2**31 + 5, 1.5, False)
    k1 = specialization_key(kernel, *args, BLOCK=64)
    assert k1 == specialization_key(kernel, *args, 64)
    assert k1 == specialization_key(kernel, *args, 64, 0)
    assert k1 == specialization_key(kernel, *args[:2], n=100, one=1, sixteen=16, other=7,
                                    big=2**31 + 5, scale=1.5, flag=False, BLOCK=64, MODE=0)
    with pytest.raises(TypeError):  # missing BLOCK: Triton raises too (launch lets it)
        specialization_key(kernel, *args)


def test_binder_tokens_are_the_token_functions():
    """The generated binder computes the common tokens inline: for every kind of value they equal
    ``_spec_token`` / ``_type_token`` / ``_value_token``'s (or raise as they do)."""
    base = torch.zeros(64, dtype=torch.float32)

    class Sub(torch.Tensor):
        pass

    values = [0, 1, -1, 2, 8, 15, 16, 17, 24, 32, 2**31 - 8, 2**31 - 1, 2**31, -2**31,
              -2**31 - 1, 2**40, 2**63 - 1, 2**63, 2**64 - 16, 2**64 - 1, 2**64, -2**63, -2**63 - 1, True, False,
              None, 0.0, -0.0, 1.5, float("nan"), "s", base, base[1:], base[2:], base[4:],
              base.to(torch.int64), base.as_subclass(Sub), base[1:].as_subclass(Sub), (1, 2)]
    binder = fastlaunch._make_binder(["a", "b", "C"], [False, False, True], [
        inspect.Parameter.empty] * 3, [False, True, False])
    fastlaunch._triton()
    for v in values:
        expected = []
        for fn in (fastlaunch._spec_token, fastlaunch._type_token, fastlaunch._value_token):
            try:
                expected.append(fn(v))
            except fastlaunch._Unsupported:
                expected.append(fastlaunch._Unsupported)
        if fastlaunch._Unsupported in expected[:2]:
            for a, b in ((v, 0), (0, v)):
                with pytest.raises(fastlaunch._Unsupported):
                    binder(a, b, 0)
            continue
        tokens, values_out, options = binder(v, v, v, num_warps=4)
        assert list(tokens) == expected, v
        assert [type(t) for t in tokens] == [type(e) for e in expected], v
        assert values_out == (v, v, v) or v != v, v
        assert options == {"num_warps": 4}


def test_key_unsupported_types_are_not_keyed():
    kernel = _jit_function()
    x = _tensors()["f32"]
    np = pytest.importorskip("numpy")
    assert _key(kernel, x, other=np.int64(7)) is None
    assert _key(kernel, x, scale=np.float32(1.5)) is None
    assert _key(kernel, x, other="7") is None
    assert _key(kernel, x, other=(1, 2)) is None


@pytest.mark.parametrize("unspecialized", [(), ("n", "other", "big", "x_ptr")])
def test_key_partitions_calls_like_triton(unspecialized):
    """Two calls share our key exactly when they share Triton's key (Triton's own binder,
    specialization and cache key for an sm_90 target; no GPU needed). Calls: random ones, each
    with every argument in turn replaced by every value of its pool; parameters listed in
    ``do_not_specialize`` or not (Triton keys those on their type alone)."""
    from triton.compiler import make_backend

    kernel = _jit_function(unspecialized)
    backend = make_backend(GPUTarget("cuda", 90, 32))
    binder = triton_jit.create_function_from_signature(kernel.signature, kernel.params, backend)
    tensors = list(_tensors().values())
    ints = [0, 1, 2, 7, 16, 17, -1, -16, 2**31 - 1, 2**31, 2**31 + 3, -2**31, -2**31 - 1,
            -2**31 - 16, 2**40, 2**63 - 1, 2**63, 2**63 + 5, 2**64 - 16, True, False, 1.0, 2.5]
    consts = [64, 128, 1, True, 1.0, 64.0, 0.0, -0.0, None, "a"]
    pools = [tensors, tensors, ints, ints, ints, ints, ints, [1.5, 2.0, 1, True], [True, False]]
    options = [{}, {"num_warps": 4}, {"num_warps": 8}, {"num_stages": 2}]
    rng = random.Random(0)
    ours, theirs = {}, {}

    def record(args, kw):
        _, specialization, opts = binder(*args, **kw)
        triton_key = triton_jit.compute_cache_key({}, specialization, opts)
        our_key = specialization_key(kernel, *args, **kw)
        assert our_key is not None
        ours.setdefault(our_key, set()).add(triton_key)
        theirs.setdefault(triton_key, set()).add(our_key)

    for _ in range(60):
        args = [rng.choice(pool) for pool in pools]
        kw = {"BLOCK": rng.choice(consts), "MODE": rng.choice(consts), **rng.choice(options)}
        for i, pool in enumerate(pools):
            for v in pool:
                record((*args[:i], v, *args[i + 1:]), kw)
        for name in ("BLOCK", "MODE"):
            for v in consts:
                record(args, {**kw, name: v})
        for opts in options:
            record(args, {"BLOCK": kw["BLOCK"], **opts})
    assert all(len(v) == 1 for v in ours.values()), "one of our keys holds two Triton keys"
    assert all(len(v) == 1 for v in theirs.values()), "needlessly finer than Triton"
    assert len(ours) < sum(map(len, ours.values())) * 2  # not a trivial partition
    assert len(ours) > 1000


# ------------------------------------------------------------------------------ stand-in GPU
class _Recorder:
    def __init__(self):
        self.calls = []


class _FakeCompiled(CompiledKernel):
    """Stands in for a compiled kernel: its launcher records what it is called with."""

    def __init__(self, recorder, device, key):  # no super().__init__: nothing to load
        self.module, self.name = None, f"probe:{device}:{len(recorder.calls)}"
        self.function = object()  # a CUfunction handle, per compiled kernel and device
        self.packed_metadata = (device, key)
        self.recorder = recorder

    @property
    def run(self):
        return lambda *a: self.recorder.calls.append((self, a))

    def launch_metadata(self, grid, stream, *args):
        return ("metadata", grid, stream)


class _FakeDriver:
    def __init__(self):
        self.device, self.streams = 0, {0: 1111, 1: 2222}

    def get_current_target(self):
        return GPUTarget("cuda", 90, 32)

    def get_current_device(self):
        return self.device

    def get_current_stream(self, device):
        return self.streams[device]


@pytest.fixture
def fake_gpu(monkeypatch):
    """A compiled-mode kernel on a stand-in driver whose compiler records what it compiles."""
    try:  # Triton >= 3.7's binder imports gluon lazily, which fails once interpret is off below
        import triton.experimental.gluon  # noqa: F401
    except ImportError:
        pass
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    monkeypatch.delenv("QRITA_FAST_LAUNCH", raising=False)
    drv = _FakeDriver()
    monkeypatch.setattr(triton_driver, "_active", drv)
    kernel = _jit_function()
    recorder = _Recorder()
    compiled = {}

    def do_compile(key, signature, device, constexprs, options, attrs, warmup):
        ck = _FakeCompiled(recorder, device, key)
        compiled[(device, key)] = ck
        kernel.device_caches[device][0][key] = ck
        return ck

    monkeypatch.setattr(kernel, "_do_compile", do_compile, raising=False)
    return kernel, drv, recorder, compiled


def _calls():
    ts = _tensors()
    x, y = ts["f32"], ts["f16"]
    cases = []
    for xx, other, big, block, mode, warps in itertools.product(
            [x, ts["f32_off4"]], [1, 7, 16], [5, 2**31 + 5], [64, 128], [0, 1], [None, 8]):
        args = (xx, y, 100, 1, 16, other, big, 0.5, other == 7)
        kw = {"BLOCK": block} if mode == 0 else {"BLOCK": block, "MODE": mode}
        if warps:
            kw["num_warps"] = warps
        cases.append(((3, 2), args, kw))
    cases.append(((5,), (x, y, 33, 1, 32, 3, 9, 2.0, True), {"BLOCK": 32}))
    cases.append([(2, 1, 4, 9), (x, y, 33, 1, 32, 3, 9, 2.0, True), {"BLOCK": 32}])
    cases.append(((7,), (x, y), dict(n=3, one=1, sixteen=16, other=5, big=2, scale=1.0,
                                     flag=False, BLOCK=16, MODE=1)))
    return cases


def _split(call):
    compiled, a = call
    return compiled, a[:4], a[4], a[5], a[6], a[7], a[8], a[9:]


def test_fast_path_launches_what_triton_launches(fake_gpu, monkeypatch):
    # the very objects Triton hands its launcher: tensors as tensors (``QRITA_LAUNCH_POINTERS=0``;
    # the default, addresses, is the next test's)
    monkeypatch.setattr(fastlaunch, "_POINTERS", False)
    kernel, drv, recorder, compiled = fake_gpu
    assert fast_path_active(kernel), fastlaunch._kernels[id(kernel)].reason
    for grid, args, kw in _calls():
        kernel[grid](*args, **kw)  # what JITFunction.run hands the launcher
        launch(kernel, grid, *args, **kw)  # first time for this key: the normal path
        launch(kernel, grid, *args, **kw)  # the fast path
        slow, first, fast = recorder.calls[-3:]
        s_ck, s_grid, s_fn, s_meta, s_lmeta, s_enter, s_exit, s_args = _split(slow)
        f_ck, f_grid, f_fn, f_meta, f_lmeta, f_enter, f_exit, f_args = _split(fast)
        assert first[0] is s_ck
        assert f_ck is s_ck and f_fn is s_fn is s_ck.function and f_meta is s_meta
        assert f_grid == s_grid and f_grid[3] == drv.streams[0]
        assert len(f_args) == len(s_args) and all(a is b for a, b in zip(f_args, s_args))
        assert f_lmeta is None and f_enter is None and f_exit is None  # the fast path ran
        assert s_enter is not None and not s_enter.calls  # Triton's default: an empty chain
    assert len(fastlaunch._kernels[id(kernel)].cache) == len(compiled)  # one entry per kernel


def test_fast_path_passes_addresses_with_pointers_on(fake_gpu, monkeypatch):
    """``fastlaunch._POINTERS`` (on unless ``QRITA_LAUNCH_POINTERS=0``): the fast path (``launch`` and
    ``launch_site``) hands the launcher each tensor's address where Triton hands it the tensor,
    every other value as it is (None pointers, ints, floats, bools)."""
    monkeypatch.setattr(fastlaunch, "_POINTERS", True)
    kernel, _, recorder, _ = fake_gpu
    ts = _tensors()
    cases = [((3,), (ts["f32"], ts["f16"], 100, 1, 16, 7, 2**31 + 5, 0.5, True), {"BLOCK": 64}),
             ((2, 2), (ts["f32_off4"], None, 33, 1, 32, 3, 9, 2.0, False), {"BLOCK": 32}),
             ((1,), (ts["f16_off2"], ts["f32_off16"], 5, 1, 16, 16, 2, 1.0, True),
              {"BLOCK": 16, "MODE": 1})]
    for i, (grid, args, kw) in enumerate(cases):
        for fast_call in (launch, functools.partial(fastlaunch.launch_site, ("ptr", i))):
            kernel[grid](*args, **kw)
            fast_call(kernel, grid, *args, **kw)  # the first: the normal path (keys it)
            fast_call(kernel, grid, *args, **kw)
            slow, _, fast = recorder.calls[-3:]
            s_args, f_args = _split(slow)[-1], _split(fast)[-1]
            assert _split(fast)[0] is _split(slow)[0]
            assert len(f_args) == len(s_args)
            for s_arg, f_arg in zip(s_args, f_args):
                if isinstance(s_arg, torch.Tensor):
                    assert type(f_arg) is int and f_arg == s_arg.data_ptr()
                else:
                    assert f_arg is s_arg


def _plain_args():
    """The test kernel's non-constexpr arguments for one plain float32 call."""
    x = _tensors()["f32"]
    return (x, x, 10, 1, 16, 3, 9, 2.0, True)


def test_grid_padding(fake_gpu):
    kernel, _, recorder, _ = fake_gpu
    args = _plain_args()
    for grid, padded in [((4,), (4, 1, 1)), ((4, 3), (4, 3, 1)), ([4, 3, 2], (4, 3, 2))]:
        launch(kernel, grid, *args, BLOCK=16)
        launch(kernel, grid, *args, BLOCK=16)
        assert recorder.calls[-1][1][:3] == padded
        assert recorder.calls[-1][1][6] is None  # fast


def test_current_device_and_stream(fake_gpu):
    kernel, drv, recorder, compiled = fake_gpu
    args = _plain_args()
    launch(kernel, (1,), *args, BLOCK=16)
    launch(kernel, (1,), *args, BLOCK=16)
    on0 = recorder.calls[-1][0]
    drv.device = 1  # torch.cuda.set_device(1)
    launch(kernel, (1,), *args, BLOCK=16)
    launch(kernel, (1,), *args, BLOCK=16)
    ck, a = recorder.calls[-1]
    assert ck is not on0 and ck.packed_metadata[0] == 1 and a[3] == drv.streams[1]
    drv.streams[1] = 3333  # torch.cuda.stream(s) / graph capture
    launch(kernel, (1,), *args, BLOCK=16)
    assert recorder.calls[-1][1][3] == 3333 and recorder.calls[-1][1][6] is None


def _last_was_fast(recorder):
    return recorder.calls[-1][1][6] is None


def test_normal_path_with_launch_hooks(fake_gpu):
    from triton import knobs

    kernel, _, recorder, _ = fake_gpu
    args = _plain_args()
    launch(kernel, (1,), *args, BLOCK=16)
    launch(kernel, (1,), *args, BLOCK=16)
    assert _last_was_fast(recorder)
    seen = []
    hook = knobs.runtime.launch_enter_hook
    if hasattr(hook, "add"):  # a HookChain (Triton >= 3.4)
        hook.add(seen.append)
        try:
            launch(kernel, (1,), *args, BLOCK=16)
        finally:
            hook.remove(seen.append)
    else:
        knobs.runtime.launch_enter_hook = seen.append
        try:
            launch(kernel, (1,), *args, BLOCK=16)
        finally:
            knobs.runtime.launch_enter_hook = hook
    assert not _last_was_fast(recorder)
    launch(kernel, (1,), *args, BLOCK=16)
    assert _last_was_fast(recorder)


class _Pointer:
    """Not a torch tensor, but Triton takes it as a pointer (it has data_ptr and dtype)."""

    dtype = torch.float32

    def data_ptr(self):
        return 4096


def test_normal_path_for_pre_run_hooks_callable_grid_and_unkeyed_args(fake_gpu):
    np = pytest.importorskip("numpy")
    kernel, _, recorder, _ = fake_gpu
    args = _plain_args()
    launch(kernel, (1,), *args, BLOCK=16)
    launch(kernel, lambda meta: (1,), *args, BLOCK=16)
    assert not _last_was_fast(recorder)
    for _ in range(2):
        launch(kernel, (1,), _Pointer(), *args[1:], BLOCK=16)
        assert not _last_was_fast(recorder)
    with pytest.raises(TypeError):  # Triton's own error for an argument it cannot take
        launch(kernel, (1,), *args[:5], np.int64(3), *args[6:], BLOCK=16)
    kernel.add_pre_run_hook(lambda *a, **k: None)
    launch(kernel, (1,), *args, BLOCK=16)
    assert not _last_was_fast(recorder)


def test_launch_site_launches_what_triton_launches(fake_gpu, monkeypatch):
    """``launch_site``: the first call per site takes ``launch`` (which keys it); later calls
    with the site launch the same compiled kernel with the same arguments, without a key
    (tensors as tensors, ``QRITA_LAUNCH_POINTERS=0``)."""
    monkeypatch.setattr(fastlaunch, "_POINTERS", False)
    kernel, drv, recorder, _ = fake_gpu
    k = fastlaunch._get(kernel)
    for i, (grid, args, kw) in enumerate(_calls()):
        kernel[grid](*args, **kw)
        fastlaunch.launch_site(("case", i), kernel, grid, *args, **kw)
        keyed = k.key
        k.key = None  # a keyed call would fail now: the site's calls do not key
        try:
            fastlaunch.launch_site(("case", i), kernel, grid, *args, **kw)
        finally:
            k.key = keyed
        slow, _, fast = recorder.calls[-3:]
        s_ck, s_grid, s_fn, s_meta, _, _, _, s_args = _split(slow)
        f_ck, f_grid, f_fn, f_meta, f_lmeta, _, _, f_args = _split(fast)
        assert f_ck is s_ck and f_fn is s_fn and f_meta is s_meta and f_grid == s_grid
        assert len(f_args) == len(s_args) and all(a is b for a, b in zip(f_args, s_args))
        assert f_lmeta is None
    drv.device = 1  # another device: the site is keyed again there
    grid, args, kw = _calls()[0]
    fastlaunch.launch_site(("case", 0), kernel, grid, *args, **kw)
    assert recorder.calls[-1][0].packed_metadata[0] == 1


def test_launch_site_too_coarse_is_caught_when_verifying(fake_gpu, monkeypatch):
    kernel, _, recorder, _ = fake_gpu
    x = _tensors()
    args = _plain_args()
    fastlaunch.launch_site("one site", kernel, (1,), *args, BLOCK=16)
    fastlaunch.launch_site("one site", kernel, (1,), *args, BLOCK=16)
    monkeypatch.setattr(fastlaunch, "_VERIFY", True)
    fastlaunch.launch_site("one site", kernel, (1,), *args, BLOCK=16)  # the same: fine
    with pytest.raises(fastlaunch.SiteKeyError):  # the alignment of x differs
        fastlaunch.launch_site("one site", kernel, (1,), x["f32_off4"], *args[1:], BLOCK=16)
    with pytest.raises(fastlaunch.SiteKeyError):  # a constexpr differs
        fastlaunch.launch_site("one site", kernel, (1,), *args, BLOCK=32)


@pytest.fixture
def fake_launch_module(monkeypatch):
    """Every kernel ``qrita.backends.triton.launch`` launches as a compiled-mode kernel (the same
    function) on the stand-in driver, every site checked against the full key (``_VERIFY``)."""
    try:
        import triton.experimental.gluon  # noqa: F401
    except ImportError:
        pass
    from triton.runtime.interpreter import InterpretedFunction

    from qrita.backends.triton import launch as launch_mod

    # read (and cached) once per process, as triton.jit reads it: read it before the switch
    # below, or later tests of this process would see the switched value
    launch_mod.interpreting()
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    monkeypatch.delenv("QRITA_FAST_LAUNCH", raising=False)
    monkeypatch.setattr(triton_driver, "_active", _FakeDriver())
    monkeypatch.setattr(fastlaunch, "_VERIFY", True)
    recorder = _Recorder()
    for name, original in list(vars(launch_mod).items()):
        if not isinstance(original, (InterpretedFunction, triton_jit.JITFunction)):
            continue
        options = getattr(original, "kwargs", None) or {}
        unspecialized = options.get("do_not_specialize") or [
            p.name for p in getattr(original, "params", []) if p.do_not_specialize]
        kernel = triton_jit.JITFunction(original.fn, do_not_specialize=list(unspecialized))

        def do_compile(key, signature, device, constexprs, options, attrs, warmup,
                       _kernel=kernel):
            ck = _FakeCompiled(recorder, device, key)
            _kernel.device_caches[device][0][key] = ck
            return ck

        monkeypatch.setattr(kernel, "_do_compile", do_compile, raising=False)
        monkeypatch.setattr(launch_mod, name, kernel)
    return launch_mod, recorder


def _twice_the_second_fast(recorder, fn, *args, **kwargs):
    """Call ``fn(*args, **kwargs)`` twice; the second call's launches all take the fast path."""
    fn(*args, **kwargs)
    n = len(recorder.calls)
    fn(*args, **kwargs)
    again = recorder.calls[n:]
    assert again and all(a[6] is None for _, a in again), [a[6] is None for _, a in again]


def test_reject_draw_sites_are_as_fine_as_the_key(fake_launch_module):
    """The rejection draw names its launches' specialization by one site per call: over
    scalar / per-row p, min-p and temperatures, scalar seeds and offsets of every integer type,
    per-row ones, a misaligned row, 16-bit logits and a caller's rounds, every launch's site
    agrees with the full key (``_VERIFY`` raises otherwise), and a repeated call launches
    without keying."""
    launch_mod, recorder = fake_launch_module
    base = torch.zeros((3, 301), dtype=torch.float32)
    rows = torch.zeros(3, dtype=torch.float32)
    cases = []
    for x in (base[:, :300], base.view(-1)[1:1 + 3 * 300].view(3, 300),
              base[:, :300].to(torch.bfloat16), base[:, :300].to(torch.float16)):
        cases += [dict(x=x, p=0.9, seed=5, offset=0), dict(x=x, p=None, seed=2**63 + 3, offset=7)]
    x = base[:, :300]
    cases += [
        dict(x=x, p=rows + 0.5, seed=torch.arange(3), offset=torch.arange(3)),
        dict(x=x, p=0.9, min_p=0.1, seed=2**40, offset=2**64 - 1),
        dict(x=x, p=rows.double() + 0.5, min_p=rows + 0.1, seed=None, offset=1),
        dict(x=x, p=0.0, temperature=0.5, seed=1, offset=0),
        dict(x=x, p=0.9, temperature=rows + 1.0, seed=1, offset=0),
        dict(x=x, p=0.9, seed=torch.tensor([9]), offset=0),
        dict(x=x, p=0.9, seed=1, offset=0, rounds=torch.zeros(3, dtype=torch.int32)),
        dict(x=x, p=0.9, seed=1, offset=0,
             rounds=torch.zeros(4, dtype=torch.int32)[1:]),
    ]
    for case in cases:
        case = dict(case)
        x, p = case.pop("x"), case.pop("p")
        args = (x, case.pop("temperature", None), p, case.pop("seed"), case.pop("offset"),
                case.pop("min_p", None))
        _twice_the_second_fast(recorder, launch_mod.launch_reject_topp_sample, *args, **case)


def test_pipeline_sites_are_as_fine_as_the_key(fake_launch_module):
    """The masks' and the selection's pipeline (and their one-launch kernels for small batches)
    name all their launches' specialization by one site per call: top-k, top-p and both (scalar k of every kind the key tells apart, per-row
    k / p), the wide stage, in place and out of place, a misaligned row, 16-bit logits, a
    caller's row_info, batch sizes whose workspace parts lie differently and vocabularies whose
    launch configurations differ; every launch's site agrees with the full key (``_VERIFY``
    raises otherwise)."""
    launch_mod, recorder = fake_launch_module
    base = torch.zeros((5, 1026), dtype=torch.float32)
    for B, V in ((1, 256), (2, 256), (3, 256), (5, 256), (2, 1024), (3, 512)):
        for x in (base[:B, :V], base.view(-1)[1:1 + B * V].view(B, V),
                  base[:B, :V].to(torch.bfloat16)):
            rows_k = torch.full((B,), 7, dtype=torch.int64)
            rows_p = torch.full((B,), 0.5, dtype=torch.float32)
            for k, p in ((1, None), (16, None), (50, None), (None, 0.9), (50, 0.9), (rows_k, None),
                         (None, rows_p), (rows_k, rows_p), (V - 1, 0.99)):
                out = torch.empty_like(x)
                _twice_the_second_fast(recorder, launch_mod.launch_mask, x, out, k, p,
                                       float("-inf"))
            y = x.clone()
            _twice_the_second_fast(recorder, launch_mod.launch_mask, y, y, None, 0.9, 0.0)
            info = torch.zeros((B, launch_mod.ROW_INFO), dtype=torch.int32)
            _twice_the_second_fast(recorder, launch_mod.launch_mask, x, torch.empty_like(x), 5,
                                   None, 0.0, row_info=info)
            for k in (1, 16, 40):
                for smallest, with_key in ((False, False), (True, True)):
                    _twice_the_second_fast(recorder, launch_mod.launch_select, x, k,
                                           smallest=smallest, with_key=with_key)
            # the one-launch kernels of small batches (top-k mask, selection)
            for k in (1, 16, 40, 100, rows_k):
                _twice_the_second_fast(recorder, launch_mod._launch_topk_mask_one, x,
                                       torch.empty_like(x), k, 0.0, launch_mod.pipeline_config(
                                           V, x.dtype))
            for k, smallest, sorted_ in ((1, False, True), (16, True, True), (40, False, True),
                                         (100, False, True), (40, False, False)):
                _twice_the_second_fast(recorder, launch_mod.launch_select_one, x, k,
                                       smallest=smallest, sorted=sorted_)


def test_fused_sampler_sites_are_as_fine_as_the_key(fake_launch_module, monkeypatch):
    """The fused top-k sampler (one launch for a small batch; selection + draw otherwise) names
    its launches by sites as fine as the key: scalar / per-row temperature, p and min-p, k
    from 1 to past 256 (the draw's warps), float32 and bfloat16, a misaligned row."""
    launch_mod, recorder = fake_launch_module
    base = torch.zeros((3, 514), dtype=torch.float32)
    rows = torch.full((3,), 0.5, dtype=torch.float32)
    for one in ("1", "0"):
        monkeypatch.setenv("QRITA_ONE_LAUNCH", one)
        for x in (base[:, :512], base.view(-1)[1:1 + 3 * 512].view(3, 512),
                  base[:, :512].to(torch.bfloat16)):
            u = torch.zeros(3, dtype=torch.float32)
            for k, t, p, m in ((1, None, None, None), (16, 0.7, 0.9, None),
                               (50, rows, rows, rows), (300, None, 0.0, 0.1),
                               (40, 1.0, None, rows.double()),
                               # pairs told apart by one flag, or by a scalar's integer type
                               (50, None, 0.0, None), (50, None, rows, None),
                               (50, None, 0.5, None)):
                _twice_the_second_fast(recorder, launch_mod.launch_fused_sample, x, k, u, t, p,
                                       m)


def test_bad_calls_raise_as_triton_does(fake_gpu):
    kernel, _, _, _ = fake_gpu
    args = _plain_args()
    launch(kernel, (1,), *args, BLOCK=16)
    launch(kernel, (1,), *args, BLOCK=16)
    with pytest.raises(TypeError):
        launch(kernel, (1,), *args)  # missing BLOCK
    with pytest.raises(TypeError):
        launch(kernel, (1,), *args, 16, n=3, BLOCK=16)  # n twice
    with pytest.raises(KeyError):
        launch(kernel, (1,), *args, BLOCK=16, num_wraps=4)  # unknown option


@pytest.mark.parametrize("changed", ["G", "H"])
def test_changed_global_raises_as_triton_does(fake_gpu, changed):
    kernel, _, recorder, _ = fake_gpu
    args = _plain_args()
    launch(kernel, (1,), *args, BLOCK=16)
    scope = {"G": tl.constexpr(4), "H": 2**40}
    kernel.used_global_vals = {("G", id(scope)): (tl.constexpr(4), scope),  # deep copies
                               ("H", id(scope)): (2**40, scope)}
    launch(kernel, (1,), *args, BLOCK=16)
    assert _last_was_fast(recorder)
    scope.update(G=tl.constexpr(4), H=2**40 + 0)  # equal values: fine for Triton too
    launch(kernel, (1,), *args, BLOCK=16)
    assert _last_was_fast(recorder)
    scope[changed] = tl.constexpr(5) if changed == "G" else 7
    with pytest.raises(RuntimeError, match=f"Global variable {changed} has changed"):
        launch(kernel, (1,), *args, BLOCK=16)


def test_switched_off(fake_gpu, monkeypatch):
    kernel, _, recorder, _ = fake_gpu
    monkeypatch.setenv("QRITA_FAST_LAUNCH", "0")
    args = _plain_args()
    for _ in range(3):
        launch(kernel, (1,), *args, BLOCK=16)
        assert not _last_was_fast(recorder)
    assert not fast_path_active(kernel)


def test_unexpected_triton_disables_fast_path(fake_gpu, monkeypatch):
    """A JITFunction.run that launches differently (a future Triton): the normal path, always."""
    kernel, _, recorder, _ = fake_gpu
    real = fastlaunch.inspect.getsource
    monkeypatch.setattr(fastlaunch, "_tr", None)
    monkeypatch.setattr(fastlaunch, "_tr_error", "")
    monkeypatch.setattr(fastlaunch.inspect, "getsource",
                        lambda obj: real(obj).replace("*bound_args.values()", "*launch_args"))
    args = _plain_args()
    for _ in range(3):
        launch(kernel, (1,), *args, BLOCK=16)
        assert not _last_was_fast(recorder)
    assert "differs" in fastlaunch._kernels[id(kernel)].reason


def test_setup_failure_falls_back(monkeypatch):
    """No usable driver (this machine without a GPU, or a broken one): the normal path, which
    raises Triton's own error, for good."""
    monkeypatch.setenv("TRITON_INTERPRET", "0")

    class Broken:
        def get_current_target(self):
            raise RuntimeError("0 active drivers")

        get_current_device = get_current_target

    monkeypatch.setattr(triton_driver, "_active", Broken())
    kernel = _jit_function()
    x = _tensors()["f32"]
    with pytest.raises(RuntimeError, match="0 active drivers"):
        launch(kernel, (1,), x, x, 10, 1, 16, 3, 9, 2.0, True, BLOCK=16)
    assert not fast_path_active(kernel)


# ------------------------------------------------------------------------------ interpreter
@pytest.mark.skipif(not INTERPRET, reason="needs TRITON_INTERPRET=1")
def test_interpreter_falls_back_and_matches():
    assert not fast_path_active(probe)
    assert "TRITON_INTERPRET" in fastlaunch._kernels[id(probe)].reason
    torch.manual_seed(0)
    # flag as an int: Triton 3.6's interpreter rejects bool arguments (its own bug)
    for dtype, other, big, flag, mode in [(torch.float32, 7, 2**31 + 5, 0, 0),
                                          (torch.float16, 16, 3, 1, 1),
                                          (torch.float32, 1, 2**33, 2, 0)]:
        x = torch.randn(200, dtype=torch.float32).to(dtype)
        want, got = torch.empty_like(x), torch.full_like(x, float("nan"))
        args = (200, 1, 16, other, big, 0.5, flag)
        probe[(4,)](x, want, *args, BLOCK=64, MODE=mode)
        launch(probe, (4,), x, got, *args, BLOCK=64, MODE=mode)
        assert torch.equal(got.view(torch.int16 if dtype == torch.float16 else torch.int32),
                           want.view(torch.int16 if dtype == torch.float16 else torch.int32))


# ------------------------------------------------------------------------------ GPU
def _bits(t):
    return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


_BASE = dict(dtype=torch.float32, offset=0, other=7, big=5, block=64, mode=0, flag=False)
_GPU_CASES = [{}, {"dtype": torch.float16}, {"dtype": torch.bfloat16}, {"offset": 1},
              {"other": 1}, {"other": 16}, {"other": 48}, {"big": 2**31 + 5}, {"big": 2**40},
              {"big": -2**31 - 3}, {"block": 256}, {"mode": 1}, {"flag": True},
              {"dtype": torch.float16, "offset": 1, "other": 16, "big": 2**40, "block": 256,
               "mode": 1, "flag": True}]


@pytest.mark.gpu
def test_gpu_outputs_bit_for_bit():
    """Each specialization dimension changed on its own (and all at once): launch's first call
    (the normal path) and second call (the fast path) write what kernel[grid] writes."""
    assert fast_path_active(probe), fastlaunch._kernels[id(probe)].reason
    torch.manual_seed(0)
    n = 1000
    for change in _GPU_CASES:
        c = {**_BASE, **change}
        base = torch.randn(n + 8, device="cuda").to(c["dtype"])
        x = base[c["offset"]:c["offset"] + n]
        want = torch.empty(n, dtype=c["dtype"], device="cuda")
        args = (n, 1, 16, c["other"], c["big"], 0.5, c["flag"])
        grid = (triton.cdiv(n, c["block"]),)
        probe[grid](x, want, *args, BLOCK=c["block"], MODE=c["mode"])
        outs = []
        for _ in range(3):  # the normal path first (a new key), then the fast path
            outs.append(torch.full_like(want, float("nan")))
            launch(probe, grid, x, outs[-1], *args, BLOCK=c["block"], MODE=c["mode"])
        torch.cuda.synchronize()
        for out in outs:
            assert torch.equal(_bits(out), _bits(want)), change
    # distinct specializations: other=48 is keyed as other=16 (both divisible by 16), and
    # big=2**40 / -2**31-3 as big=2**31+5 (all i64): 14 cases, 11 keys
    assert len(fastlaunch._kernels[id(probe)].cache) >= 11


@pytest.mark.gpu
def test_gpu_outputs_with_addresses(monkeypatch):
    """``fastlaunch._POINTERS`` (tensors handed to the launcher as addresses): a fresh kernel's
    fast path writes what ``kernel[grid]`` writes, at two alignments and dtypes."""
    monkeypatch.setattr(fastlaunch, "_POINTERS", True)
    kernel = triton.jit(_probe)
    n = 1000
    for dtype, offset in ((torch.float32, 0), (torch.float16, 1)):
        base = torch.randn(n + 8, device="cuda").to(dtype)
        x = base[offset:offset + n]
        want = torch.empty(n, dtype=dtype, device="cuda")
        args = (n, 1, 16, 7, 2**31 + 5, 0.5, True)
        grid = (triton.cdiv(n, 128),)
        kernel[grid](x, want, *args, BLOCK=128)
        outs = [torch.full_like(want, float("nan")) for _ in range(3)]
        for out in outs:
            launch(kernel, grid, x, out, *args, BLOCK=128)
        torch.cuda.synchronize()
        for out in outs:
            assert torch.equal(_bits(out), _bits(want)), dtype
    entries = fastlaunch._kernels[id(kernel)].cache.values()
    assert entries and all(e.convert is not None for e in entries)


@pytest.mark.gpu
def test_gpu_non_default_stream():
    n, block = 4096, 256
    x = torch.randn(n, device="cuda")
    want = torch.empty_like(x)
    args = (n, 1, 16, 7, 2**31 + 5, 0.25, True)
    probe[(n // block,)](x, want, *args, BLOCK=block)
    launch(probe, (n // block,), x, torch.empty_like(x), *args, BLOCK=block)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        got = torch.empty_like(x)
        for _ in range(3):
            launch(probe, (n // block,), x, got, *args, BLOCK=block)
    stream.synchronize()
    assert torch.equal(_bits(got), _bits(want))


@pytest.mark.gpu
def test_gpu_cuda_graph_capture():
    n, block = 4096, 128
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    args = (n, 1, 16, 7, 2**31 + 5, 0.5, False)
    grid = (n // block,)
    launch(probe, grid, x, out, *args, BLOCK=block, MODE=1)  # compile outside the capture
    launch(probe, grid, x, out, *args, BLOCK=block, MODE=1)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        launch(probe, grid, x, out, *args, BLOCK=block, MODE=1)
    torch.cuda.current_stream().wait_stream(stream)
    x.copy_(torch.randn(n, device="cuda"))
    out.zero_()
    graph.replay()
    want = torch.empty_like(x)
    probe[grid](x, want, *args, BLOCK=block, MODE=1)
    torch.cuda.synchronize()
    assert torch.equal(_bits(out), _bits(want))


@pytest.mark.gpu
@pytest.mark.skipif(not ON_GPU or torch.cuda.device_count() < 2, reason="needs 2 GPUs")
def test_gpu_current_device():
    n, block = 1024, 128
    args = (n, 1, 16, 7, 9, 0.5, False)
    outs = {}
    for dev in (0, 1, 0, 1):
        with torch.cuda.device(dev):
            x = torch.arange(n, dtype=torch.float32, device="cuda")
            out = torch.empty_like(x)
            launch(probe, (n // block,), x, out, *args, BLOCK=block)
            torch.cuda.synchronize()
            outs.setdefault(dev, []).append(out.cpu())
    assert all(torch.equal(a, outs[0][0]) for v in outs.values() for a in v)
