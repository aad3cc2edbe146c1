"""A pytest plugin that breaks the JAX adapter's stream ordering on purpose (not a test).

It shows that ``tests/test_backend_gpu.py::test_jax_eager_orders_the_streams_both_ways`` can
fail: with ``QRITA_MUTATION=nowait`` the result's capsule goes to JAX without JAX's stream
waiting for torch's; with ``QRITA_MUTATION=wrongstream`` jaxlib's export makes another stream
than torch's current one wait for the input. Both tests should then fail on a GPU::

    QRITA_MUTATION=nowait PYTHONPATH=benchmarks python -m pytest -p mutate_jax_order \
        tests/test_backend_gpu.py::test_jax_eager_orders_the_streams_both_ways
"""

from __future__ import annotations

import os


def pytest_configure(config) -> None:
    mutation = os.environ.get("QRITA_MUTATION", "")
    if not mutation:
        return
    import torch

    from qrita.backends import _jax

    if mutation == "nowait":
        def unordered(t, key, stream):
            if stream is None or key[0] == 1:
                return None
            return torch._C._to_dlpack(t)

        _jax._ordered_capsule = unordered
    elif mutation == "wrongstream":
        other = torch.cuda.Stream()
        real = _jax._torch_cuda_getters()

        def getters():
            get_device, _, from_capsule, to_capsule, is_cuda = real
            return (get_device, lambda index: other.cuda_stream, from_capsule, to_capsule,
                    is_cuda)

        _jax._torch_cuda_getters = getters
    else:
        raise ValueError(f"unknown QRITA_MUTATION {mutation!r}")
    print(f"mutate_jax_order: {mutation}")
