"""Launch already-compiled Triton kernels without ``JITFunction.run``'s per-call host work.

Why
    ``kernel[grid](*args, **kwargs)`` runs ``JITFunction.run`` on every call: it binds the
    arguments, specializes each one (``native_specialize_impl``), builds a string cache key and
    the launch metadata before it reaches the compiled launcher. On an H200 (Triton 3.6) that is
    ~50-65 us per launch, while a batch-1 mask call has ~30 us of GPU work in four launches.
    ``launch(kernel, grid, *args, **kwargs)`` has the same effect, but once a specialization has
    been seen it computes a cheap key of its own and calls the cached ``CompiledKernel`` directly.

How
    The first call for each key goes through ``kernel[grid](*args, **kwargs)``: Triton
    specializes, compiles (or finds) and launches the kernel and returns the ``CompiledKernel``,
    which is remembered under our key. Later calls with an equal key call ``compiled.run`` as
    ``JITFunction.run`` does: the grid padded to three dimensions with 1s, the current torch stream
    of the current device (``driver.active.get_current_device`` / ``get_current_stream``, so
    ``torch.cuda.set_device``, ``torch.cuda.stream`` and CUDA-graph capture behave as with
    ``kernel[grid]``), the compiled function and packed metadata, and every parameter's value in
    declaration order, defaults filled in (the launcher itself drops constexprs and the ints
    specialized to 1). No launch metadata and no hooks are passed: while hooks are installed,
    calls take the normal path. Arguments are bound by a function generated with the kernel's
    parameters plus ``**options``, as Triton's own binder is. As ``JITFunction.run`` does, every
    call checks that the globals the kernel read at compile time are unchanged (if one changed,
    the call goes to Triton, which raises).

The key
    It must tell apart any two calls that Triton would compile or launch differently; being finer
    than Triton's only costs one extra normal call. It holds the device, ``debug`` and the
    ``knobs.compilation`` values that ``JITFunction.run`` copies into the options, and

    * per non-constexpr parameter, what Triton specializes on: for a tensor its dtype and whether
      ``data_ptr() % 16 == 0``; for an int whether it equals 1, whether it is divisible by 16 and
      whether it fits i32, u64 or else i64 (for a parameter the kernel lists in
      ``do_not_specialize`` only its type, as Triton keys it); ``float`` / ``bool`` / ``None`` by
      type. Other types (tuples, tensor descriptors, ...) are not keyed: such a call
      takes the normal path;
    * per constexpr parameter, and per launch option (``num_warps``, ``num_stages``, ...; names
      and order kept), its value: ints and strings as they are, anything else as type and
      ``repr``, which is what Triton's string key holds.

Assumptions, checked when a kernel is first launched (if one fails, or the set-up raises, that
kernel always takes the normal path)
    * ``JITFunction.run`` binds with ``binder(*args, **kwargs)``, keys its cache on the
      specialization and options only, pads the grid with 1s, launches with ``kernel.run(grid_0,
      grid_1, grid_2, stream, kernel.function, kernel.packed_metadata, launch_metadata,
      enter_hook, exit_hook, *bound_args.values())`` and copies into the options only the global
      values keyed above (its source is read once to check this; true for Triton 3.6 to 3.9);
    * a CUDA target whose backend keeps Triton's default specialization (the one keyed above);
    * a plain ``JITFunction`` (not an autotuner, heuristics or interpreter wrapper) whose
      parameters are all positional-or-keyword;
    * Triton never drops a compiled kernel from its in-memory cache (it does not).

``launch_site(site, kernel, grid, ...)`` goes one step further for a caller that knows what
decides its call's specialization: ``site`` (any hashable value) stands for the key. After the
first call per site only the arguments' values are bound (a generated function, no tokens):
the per-argument key is what costs most of ``launch``'s host time for qrita's kernels (20-35
parameters). A site must be as fine as the key; ``QRITA_FAST_LAUNCH_VERIFY=1`` (the tests)
checks every call against the full key.

Per call, the normal path is taken while launch enter/exit hooks (profilers), pre-run hooks or a
stages-inspection hook are installed, for a callable grid, and for a call Triton would reject.
The fast path is off under ``TRITON_INTERPRET=1`` and with ``QRITA_FAST_LAUNCH=0`` (both read when
a kernel is first launched). Kernels seen by ``launch`` are kept alive by its cache.
"""

from __future__ import annotations

import inspect
import operator
import os
import re
from collections.abc import Hashable, Sequence
from types import SimpleNamespace
from typing import Any

import torch

_Tensor = torch.Tensor

__all__ = ["launch", "launch_site", "SiteKeyError", "fast_path_active", "specialization_key"]


class _Unsupported(Exception):
    """An argument we do not key: the call takes the normal path."""


# ------------------------------------------------------------------------------ Triton check
# What JITFunction.run does, whitespace removed (Triton 3.6 - 3.9): binds, keys its cache on the
# specialization and options only, pads the grid, launches.
_RUN_STEPS = (
    "bound_args,specialization,options=binder(*args,**kwargs)",
    "grid_1=grid[1]ifgrid_size>1else1", "grid_2=grid[2]ifgrid_size>2else1",
    "kernel.run(grid_0,grid_1,grid_2,stream,kernel.function,kernel.packed_metadata,"
    "launch_metadata,knobs.runtime.launch_enter_hook,knobs.runtime.launch_exit_hook,"
    "*bound_args.values())",
)
_CACHE_KEYS = ("key=compute_cache_key(kernel_key_cache,specialization,options)",  # 3.5+
               "key=str(specialization)+str(options)")
_DEBUG_OPTION = 'kwargs["debug"]=kwargs.get("debug",self.debug)orknobs.runtime.debug'
_MISSING = object()

_tr: SimpleNamespace | None = None  # the parts of Triton the fast path uses, once checked
_tr_error = ""


def _triton() -> SimpleNamespace:
    """Import and check what the fast path relies on (once); raises when anything differs."""
    global _tr, _tr_error
    if _tr is not None:
        return _tr
    if _tr_error:
        raise RuntimeError(_tr_error)
    try:
        from triton import knobs
        from triton.backends.compiler import BaseBackend
        from triton.compiler import CompiledKernel, make_backend
        from triton.language.core import constexpr
        from triton.runtime import jit
        from triton.runtime.driver import driver

        src = re.sub(r"\s+", "", inspect.getsource(jit.JITFunction.run))
        if not all(step in src for step in _RUN_STEPS) or not any(k in src for k in _CACHE_KEYS):
            raise RuntimeError("JITFunction.run differs from what fastlaunch expects")
        # Triton 3.9 adds to the specialization only for a stages-inspection hook (we step aside)
        if src.count("specialization.append") > src.count("add_stages_inspection_hook()"):
            raise RuntimeError("JITFunction.run adds to the specialization")
        # the options JITFunction.run copies from global state: each must be one we key on
        compilation_knobs = []
        for name in re.findall(r'kwargs\["(\w+)"\]=', src):
            if name == "debug" and _DEBUG_OPTION in src:
                continue
            if f'kwargs["{name}"]=knobs.compilation.{name}' not in src:
                raise RuntimeError(f"JITFunction.run sets option {name!r} that fastlaunch does not key")
            getattr(knobs.compilation, name)
            compilation_knobs.append(name)
        _tr = SimpleNamespace(
            knobs=knobs, driver=driver, JITFunction=jit.JITFunction,
            JITCallable=getattr(jit, "JITCallable", jit.JITFunction),
            CompiledKernel=CompiledKernel, make_backend=make_backend, BaseBackend=BaseBackend,
            constexpr=constexpr,
            HookChain=getattr(knobs, "HookChain", None),
            # reads their values from knobs.compilation
            compilation_options=(operator.attrgetter(*compilation_knobs) if compilation_knobs
                                 else lambda _: ()))
    except Exception as err:
        _tr_error = f"Triton not supported by fastlaunch: {type(err).__name__}: {err}"
        raise RuntimeError(_tr_error) from err
    return _tr


# ------------------------------------------------------------------------------ keys
def _spec_token(v: Any) -> Hashable:
    """What Triton specializes a non-constexpr argument on (or finer)."""
    t = type(v)
    if t is int:  # i32: False / True (divisible by 16), 1: "one", i64: 2 / 3, u64: 4 / 5
        if -0x8000_0000 <= v <= 0x7FFF_FFFF:
            return "one" if v == 1 else v & 15 == 0  # 1 becomes a constexpr (not launched)
        if 0x8000_0000_0000_0000 <= v <= 0xFFFF_FFFF_FFFF_FFFF:
            return 4 + (v & 15 == 0)
        return 2 + (v & 15 == 0)
    if t is _Tensor:
        return (v.dtype, v.data_ptr() & 15 == 0)  # dtype, 16-byte aligned
    if t is float:
        return "fp32"
    if t is bool:
        return "u1"
    if v is None:
        return None
    if isinstance(v, _Tensor):  # subclasses (nn.Parameter, ...)
        return (v.dtype, v.data_ptr() & 15 == 0)
    raise _Unsupported(t.__name__)  # tuples, tensor descriptors, other pointer-likes, ...


def _type_token(v: Any) -> Hashable:
    """What Triton keys a ``do_not_specialize`` parameter on: its type alone (an int's i32, u64
    or else i64; a tensor's dtype, not its alignment); other values as :func:`_spec_token`."""
    t = type(v)
    if t is int:
        if -0x8000_0000 <= v <= 0x7FFF_FFFF:
            return "i32"
        return "u64" if 0x8000_0000_0000_0000 <= v <= 0xFFFF_FFFF_FFFF_FFFF else "i64"
    if t is _Tensor or isinstance(v, _Tensor):
        return v.dtype
    return _spec_token(v)


def _value_token(v: Any) -> Hashable:
    """A constexpr or option value: equal tokens mean equal values as Triton's key sees them."""
    t = type(v)
    if t is int or t is str:
        return v
    if t is bool or v is None:
        return (t, v)  # True == 1 as a dict key, but not to Triton
    if isinstance(v, _tr.JITCallable):  # Triton keys it by its source hash: we do not
        raise _Unsupported(t.__name__)
    return (t, repr(v))  # what Triton's string key holds; e.g. 0.0 and -0.0 differ


#: pass tensors to the launcher as their addresses (on unless ``QRITA_LAUNCH_POINTERS=0``, read
#: at import): Triton's C launcher calls ``data_ptr()`` and then the driver's
#: ``cuPointerGetAttribute`` for every tensor argument (a check that the address is a device
#: one), and takes an int as it is. qrita validates devices before any launch. H100 (thirty-
#: seventh session, BENCHMARKS.md): the launcher alone 11.3 -> 8.6 us per launch with the
#: conversion; host time per eager B = 1 call, mean of 3 rounds, topp0.9 mask 521 -> 506 us,
#: topk50 mask 102 -> 97, top_k k50 131 -> 120, sample p0.9 228 -> 200
_POINTERS = os.environ.get("QRITA_LAUNCH_POINTERS", "1") == "1"


def _make_pointer_converter(values: Sequence[Any]):
    """A function of a launch's values that returns them with each torch tensor (at the places
    where ``values`` hold one: a specialization's places, fixed by its key) as its address;
    None when no value is a tensor."""
    places = [i for i, v in enumerate(values) if type(v) is _Tensor]
    if not places:
        return None
    items = "".join(f"v[{i}].data_ptr(), " if i in places else f"v[{i}], "
                    for i in range(len(values)))
    namespace: dict[str, Any] = {}
    exec(f"def convert(v):\n    return ({items})\n", namespace)
    return namespace["convert"]


class _Entry:
    """One compiled specialization: its launcher and what a launch needs besides arguments
    (``convert``: with ``_POINTERS``, the values' tensors to addresses, else None)."""

    __slots__ = ("compiled", "run", "function", "packed_metadata", "convert")

    def __init__(self, compiled: Any, values: Sequence[Any] = ()) -> None:
        self.compiled = compiled  # keeps the module loaded
        self.run = compiled.run
        self.function = compiled.function
        self.packed_metadata = compiled.packed_metadata
        self.convert = _make_pointer_converter(values) if _POINTERS else None


# Inline forms of the token functions above, for the generated binder: the common cases (a
# tensor, an int in i32, an int constexpr) without a Python call; everything else calls the
# function, so the tokens are exactly the functions' (tests/test_fastlaunch.py checks both).
_SPEC_INLINE = ("((({n}).dtype, ({n}).data_ptr() & 15 == 0) if type({n}) is _Tensor else "
                "(('one' if {n} == 1 else {n} & 15 == 0) if type({n}) is int and "
                "-0x80000000 <= {n} <= 0x7FFFFFFF else _spec({n})))")
_TYPE_INLINE = "('i32' if type({n}) is int and -0x80000000 <= {n} <= 0x7FFFFFFF else _type({n}))"
_VALUE_INLINE = "({n} if type({n}) is int else _value({n}))"


def _make_binder(names: Sequence[str], constexpr: Sequence[bool], defaults: Sequence[Any],
                 unspecialized: Sequence[bool] = ()):
    """A function with the kernel's parameters (and ``**options``), as Triton binds them, that
    returns (tokens of the parameters, their values in order, options). Generated, so that
    Python binds the arguments and fills in defaults. ``unspecialized``: per parameter, whether
    the kernel lists it in ``do_not_specialize`` (its token is :func:`_type_token`)."""
    if {"_spec", "_type", "_value", "_defaults", "_Tensor", "options"} & set(names):
        raise TypeError("a kernel parameter name clashes with the binder's")
    params = [name if d is inspect.Parameter.empty else f"{name}=_defaults[{i}]"
              for i, (name, d) in enumerate(zip(names, defaults))]
    unspecialized = list(unspecialized) + [False] * (len(names) - len(unspecialized))
    tokens = [(_VALUE_INLINE if c else _TYPE_INLINE if u else _SPEC_INLINE).format(n=n)
              for n, c, u in zip(names, constexpr, unspecialized)]
    src = (f"def bind({', '.join([*params, '**options'])}):\n"
           f"    return ({''.join(t + ', ' for t in tokens)}), "
           f"({''.join(n + ', ' for n in names)}), options\n")
    namespace = {"_spec": _spec_token, "_type": _type_token, "_value": _value_token,
                 "_defaults": tuple(defaults), "_Tensor": _Tensor}
    exec(src, namespace)
    return namespace["bind"]


def _make_values_binder(names: Sequence[str], defaults: Sequence[Any]):
    """A function with the kernel's parameters (and ``**options``) that returns their values in
    declaration order, defaults filled in: :func:`_make_binder`'s values without its tokens."""
    if {"_defaults", "options"} & set(names):
        raise TypeError("a kernel parameter name clashes with the binder's")
    params = [name if d is inspect.Parameter.empty else f"{name}=_defaults[{i}]"
              for i, (name, d) in enumerate(zip(names, defaults))]
    src = (f"def values({', '.join([*params, '**options'])}):\n"
           f"    return ({''.join(n + ', ' for n in names)})\n")
    namespace = {"_defaults": tuple(defaults)}
    exec(src, namespace)
    return namespace["values"]


class _Kernel:
    """What ``launch`` knows about one kernel."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.fast = False
        self.reason = "not set up"
        self.cache: dict[tuple, _Entry] = {}
        self.sites: dict[tuple, _Entry] = {}  # launch_site's: (site, global state) -> entry

    def bind(self) -> None:
        """Read the kernel's signature (no device needed); raises for kernels we do not handle."""
        tr = _triton()
        kernel = self.kernel
        if not isinstance(kernel, tr.JITFunction) or type(kernel).run is not tr.JITFunction.run:
            raise TypeError(f"not a plain triton.jit kernel: {type(kernel).__name__}")
        params = list(kernel.signature.parameters.values())
        if any(p.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params):
            raise TypeError("kernel parameters must all be positional-or-keyword")
        if [p.name for p in params] != [p.name for p in kernel.params]:
            raise TypeError("kernel.params does not follow its signature")
        self.binder = _make_binder([p.name for p in params],
                                   [bool(p.is_constexpr) for p in kernel.params],
                                   [p.default for p in params],
                                   [bool(getattr(p, "do_not_specialize", False))
                                    for p in kernel.params])
        self.values = _make_values_binder([p.name for p in params], [p.default for p in params])
        for attr in ("pre_run_hooks", "used_global_vals", "debug"):
            getattr(kernel, attr)

    def setup(self) -> None:
        """``bind`` plus the switches and the current device's target; sets ``fast``."""
        try:
            if os.environ.get("QRITA_FAST_LAUNCH", "1") == "0":
                raise RuntimeError("QRITA_FAST_LAUNCH=0")
            tr = _triton()
            if tr.knobs.runtime.interpret:
                raise RuntimeError("TRITON_INTERPRET=1")
            self.bind()
            target = tr.driver.active.get_current_target()
            if target.backend != "cuda":
                raise RuntimeError(f"target {target.backend!r} is not CUDA")
            backend = type(tr.make_backend(target))
            if not getattr(backend, "supports_native_tensor_specialization", False) or any(
                    getattr(backend, m) is not getattr(tr.BaseBackend, m)
                    for m in ("get_int_specialization", "get_tensor_specialization")):
                raise RuntimeError(f"{backend.__name__} specializes differently")
        except Exception as err:  # the normal path, for good
            self.fast, self.reason = False, f"{type(err).__name__}: {err}"
        else:
            self.fast, self.reason = True, ""

    def key(self, device: int, args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, tuple]:
        """(our cache key, the arguments in declaration order) of a call. Raises when Triton's
        binder would (missing or unknown arguments) or for arguments we do not key."""
        tokens, values, options = self.binder(*args, **kwargs)
        knobs = _tr.knobs
        key = (device, self.kernel.debug, knobs.runtime.debug,
               _tr.compilation_options(knobs.compilation),
               tokens, tuple(options), tuple(map(_value_token, options.values())))
        return key, values


_kernels: dict[int, _Kernel] = {}  # by id(kernel); each holds its kernel, so ids are not reused


def _get(kernel: Any) -> _Kernel:
    k = _kernels.get(id(kernel))
    if k is None:
        k = _Kernel(kernel)
        k.setup()
        _kernels[id(kernel)] = k
    return k


def _hooks_idle(runtime: Any) -> bool:
    """No launch hook (Triton's default: empty HookChains) and no stages-inspection hook."""
    enter, exit_ = runtime.launch_enter_hook, runtime.launch_exit_hook
    if type(enter) is _tr.HookChain and type(exit_) is _tr.HookChain:  # the usual case, quickly
        return (not enter.calls and not exit_.calls
                and getattr(runtime, "add_stages_inspection_hook", None) is None)
    for hook in (enter, exit_):
        if hook is not None and (type(hook) is not _tr.HookChain or hook.calls):
            return False
    return getattr(runtime, "add_stages_inspection_hook", None) is None


def _globals_unchanged(kernel: Any) -> bool:
    """Triton raises when a global the kernel read at compile time has changed: let it.

    Triton tests ``now != val`` (val: a deep copy); for two ``tl.constexpr`` that is
    ``constexpr(now.value != val.value)``, so we compare the values directly (the wrapper's
    ``!=`` and ``bool`` cost ~1 us per global, and qrita's kernels read 3 to 9 of them)."""
    constexpr = _tr.constexpr
    for (name, _), (val, globals_dict) in kernel.used_global_vals.items():
        now = globals_dict.get(name, _MISSING)
        if type(now) is constexpr and type(val) is constexpr:
            if now.value != val.value:
                return False
        elif now != val:
            return False
    return True


def _fast_kernel(kernel: Any, grid: Any) -> _Kernel | None:
    """The kernel's ``_Kernel`` when this call may take the fast path, else None (normal path:
    not set up for it, a callable grid, pre-run hooks or launch hooks installed)."""
    k = _kernels.get(id(kernel)) or _get(kernel)
    if (not k.fast or callable(grid) or kernel.pre_run_hooks
            or not _hooks_idle(_tr.knobs.runtime)):
        return None
    return k


def _run(entry: _Entry, grid: Sequence[int], stream: int, values: tuple) -> None:
    """Launch a cached compiled kernel as ``JITFunction.run`` does (grid padded with 1s, no
    launch metadata or hooks)."""
    n = len(grid)
    if entry.convert is not None:
        values = entry.convert(values)
    entry.run(grid[0], grid[1] if n > 1 else 1, grid[2] if n > 2 else 1, stream,
              entry.function, entry.packed_metadata, None, None, None, *values)


# ------------------------------------------------------------------------------ public
def launch(kernel: Any, grid: Sequence[int], /, *args: Any, **kwargs: Any) -> None:
    """Same effect as ``kernel[grid](*args, **kwargs)`` (kwargs: constexprs and launch options
    such as ``num_warps`` / ``num_stages``), but after the first call for a given specialization
    it launches the cached compiled kernel directly, skipping ``JITFunction.run``'s binder."""
    k = _fast_kernel(kernel, grid)
    if k is None:
        kernel[grid](*args, **kwargs)
        return
    drv = _tr.driver.active
    device = drv.get_current_device()
    try:
        key, values = k.key(device, args, kwargs)
    except Exception:  # not keyed, or a bad call: Triton handles it (and raises if it must)
        kernel[grid](*args, **kwargs)
        return
    entry = k.cache.get(key)
    if entry is None or (kernel.used_global_vals and not _globals_unchanged(kernel)):
        compiled = kernel[grid](*args, **kwargs)  # specializes, compiles, launches (or raises)
        if isinstance(compiled, _tr.CompiledKernel) and compiled.function is not None:
            k.cache[key] = _Entry(compiled, values)
        return
    _run(entry, grid, drv.get_current_stream(device), values)


#: tests set it (or ``QRITA_FAST_LAUNCH_VERIFY=1`` at import): every :func:`launch_site` call
#: also computes the full key and raises if its site's entry is not that key's
_VERIFY = os.environ.get("QRITA_FAST_LAUNCH_VERIFY", "0") == "1"


class SiteKeyError(AssertionError):
    """A :func:`launch_site` site key was not fine enough: one site, two specializations."""


def launch_site(site: Hashable, kernel: Any, grid: Sequence[int], /, *args: Any,
                **kwargs: Any) -> None:
    """:func:`launch`, for a caller that can name its call's specialization more cheaply than
    the per-argument key: ``site`` is any hashable value that, for this kernel, determines
    everything :func:`specialization_key` holds (every argument's token, the constexprs and the
    launch options). The first call per site (and per device and global Triton state) computes
    the full key and files that key's compiled kernel under the site; later calls bind the
    arguments' values alone (no tokens) and launch it. A site too coarse would launch another
    specialization's kernel: with ``_VERIFY`` every call checks its site against the full key
    (the tests run with it)."""
    k = _fast_kernel(kernel, grid)
    if k is None:
        kernel[grid](*args, **kwargs)
        return
    drv = _tr.driver.active
    device = drv.get_current_device()
    knobs = _tr.knobs
    where = (device, kernel.debug, knobs.runtime.debug,
             _tr.compilation_options(knobs.compilation), site)
    entry = k.sites.get(where)
    if entry is None or _VERIFY:
        try:
            key, values = k.key(device, args, kwargs)
        except Exception:  # not keyed, or a bad call: Triton handles it
            kernel[grid](*args, **kwargs)
            return
        keyed = k.cache.get(key)
        if entry is not None and keyed is not entry:
            raise SiteKeyError(f"site {site!r} of {kernel.__name__} holds two specializations")
        if keyed is None or (kernel.used_global_vals and not _globals_unchanged(kernel)):
            launch(kernel, grid, *args, **kwargs)  # compiles (or raises) and files the key
            keyed = k.cache.get(key)
            if keyed is not None:
                k.sites[where] = keyed
            return
        k.sites[where] = entry = keyed
    else:
        if kernel.used_global_vals and not _globals_unchanged(kernel):
            kernel[grid](*args, **kwargs)  # Triton raises
            return
        try:
            values = k.values(*args, **kwargs)
        except TypeError:  # a bad call: Triton raises as it would
            kernel[grid](*args, **kwargs)
            return
    _run(entry, grid, drv.get_current_stream(device), values)


def fast_path_active(kernel: Any) -> bool:
    """Whether ``launch`` takes the fast path for this kernel (sets it up on first use)."""
    return _get(kernel).fast


def specialization_key(kernel: Any, /, *args: Any, **kwargs: Any) -> tuple | None:
    """The key ``launch`` files this call under on device 0; None when it is not keyed (normal
    path). Raises ``TypeError`` where Triton's binder would (missing or repeated arguments).

    For tests and debugging: it needs no GPU (only the kernel's signature is read).
    """
    k = _Kernel(kernel)
    k.bind()
    try:
        return k.key(0, args, kwargs)[0]
    except _Unsupported:
        return None
