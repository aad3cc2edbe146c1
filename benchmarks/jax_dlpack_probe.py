"""Why the JAX adapter's direct DLPack import (qrita.backends._jax._direct_import) does or does
not apply on this machine's jaxlib (not a test): versions, the internals it uses, the reason it
falls back, and the host time of the public and direct imports.

    python benchmarks/jax_dlpack_probe.py [--out DIR]
"""

from __future__ import annotations

import argparse
import inspect
import os
import time
import traceback


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="results")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax
    import jaxlib
    import torch
    from jax._src import dlpack as jdl
    from jax._src.lib import _jax

    from qrita.backends import _jax as adapter

    print("jax", jax.__version__, "jaxlib", jaxlib.__version__,
          "extension", getattr(jdl, "jaxlib_extension_version", None))
    print("dlpack_managed_tensor_to_buffer:", hasattr(_jax, "dlpack_managed_tensor_to_buffer"))
    fn = getattr(_jax, "dlpack_managed_tensor_to_buffer", None)
    print("  doc:", (getattr(fn, "__doc__", "") or "")[:600])
    # (JAX's own source is read on the machine, not copied out: only the signature)
    print("jax.dlpack.from_dlpack", inspect.signature(jax.dlpack.from_dlpack))
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    t = torch.arange(8, dtype=torch.float32, device=dev)
    # the direct import's steps, with the error shown instead of swallowed
    try:
        dl_type, dev_id = t.__dlpack_device__()
        backend = jdl.xla_bridge.get_backend(jdl._DL_DEVICE_TO_PLATFORM[dl_type])
        device = backend.device_from_local_hardware_id(dev_id)
        try:
            stream = device.get_stream_for_external_ready_events()
        except Exception as err:  # noqa: BLE001
            print("stream:", type(err).__name__, err)
            stream = None
        arr = _jax.dlpack_managed_tensor_to_buffer(t.__dlpack__(stream=stream), device, stream,
                                                   None, int(dl_type))
        print("direct steps ok:", arr.dtype, arr.shape, arr.devices())
    except Exception:  # noqa: BLE001
        traceback.print_exc()
    print("adapter._direct_import:", type(adapter._direct_import(t)).__name__)
    cases = [("public jax.dlpack.from_dlpack", lambda: jax.dlpack.from_dlpack(t)),
             ("adapter.from_torch", lambda: adapter.from_torch(t, None))]
    cai_import = getattr(_jax, "cuda_array_interface_to_buffer", None)
    if dev == "cuda" and cai_import is not None:
        # another way back (issue 5): jaxlib's import of a raw CUDA pointer, as jnp.asarray does
        # for __cuda_array_interface__. It orders no streams (the adapter would make JAX's
        # stream wait for an event of torch's), and the view does NOT keep the exporting object
        # alive: jaxlib's CudaArrayInterfaceToBuffer passes an empty on-delete callback to
        # CreateViewOfDeviceBuffer (read in jaxlib's py_array.cc), so the adapter would have to
        # hold the torch tensor until the JAX array and its pending reads are gone; s46c timed
        # it at 17.2 + 6.1 us against 34.8 for the DLPack import, not taken for that reason
        gpu = jdl.xla_bridge.get_backend("cuda")

        def by_cai():
            return cai_import(cai=t.__cuda_array_interface__, gpu_backend=gpu,
                              device_id=t.device.index)

        try:
            arr = by_cai()
            print("cuda_array_interface_to_buffer:", type(arr).__name__, arr.dtype, arr.shape,
                  "zero-copy", arr.unsafe_buffer_pointer() == t.data_ptr())
            cases.append(("cuda_array_interface_to_buffer", by_cai))
            event = torch.cuda.Event()
            jax_stream = torch.cuda.ExternalStream(
                int(device.get_stream_for_external_ready_events()), device=t.device)

            def ordered():
                event.record()
                jax_stream.wait_event(event)
            cases.append(("event record + JAX stream wait", ordered))
        except Exception:  # noqa: BLE001
            traceback.print_exc()
    for name, f in cases:
        for _ in range(20):
            f()
        t0 = time.perf_counter()
        for _ in range(500):
            f()
        print(f"{name}: {(time.perf_counter() - t0) / 500 * 1e6:.1f} us/call")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
