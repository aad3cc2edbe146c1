"""Test helpers shared by the suite, the GPU kernel tests and the benchmarks.

``generators``: deterministic adversarial logits and the ``cases`` iterator;
``compare``: ``assert_mask_matches`` / ``assert_topk_matches`` (how tests apply docs/spec.md);
``fuzz`` (not imported here): random differential fuzzing, ``python -m qrita.testing.fuzz``.
"""

from qrita.testing import compare, generators

__all__ = ["compare", "generators"]
