"""qrita: exact, deterministic top-k / top-p selection and masking over LLM logits.

Works on NumPy, torch, CuPy and JAX arrays. GPU arrays run Triton kernels; everything else runs the
NumPy reference. The answer is the same everywhere and is defined by docs/spec.md.

Importing qrita imports no array library other than NumPy.
"""

from __future__ import annotations

from qrita._api import TopK, top_k, top_k_mask, top_k_top_p_mask, top_p_mask
from qrita._sampling_api import (
    Candidates,
    candidates,
    sample,
    top_k_top_p_probs,
)

__version__ = "0.1.0"

__all__ = [
    "TopK",
    "top_k",
    "top_k_mask",
    "top_p_mask",
    "top_k_top_p_mask",
    "Candidates",
    "candidates",
    "sample",
    "top_k_top_p_probs",
    "__version__",
]
