"""Registers and barriers of the rejection draw's split kernels, compiled ahead of time for sm90.

Not a test; runs on a CPU (Triton's bundled ptxas and cuobjdump). For each (warps, tile, tiles
per group) it prints the statistics and check kernels' registers per thread and their
``bar.sync`` count (a reduction across warps costs two): the statistics kernel is bound by its
group reductions (BENCHMARKS.md, eighteenth session), and one-warp programs reduce by shuffles
alone.

    PYTHONPATH=. python benchmarks/reject_regs.py [--vocab 131072]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import tempfile

import triton
from triton.backends.compiler import GPUTarget

from qrita.backends.triton import reject_split

HEAD = {"x_ptr": "*fp32", "p_ptr": "*fp32", "min_p_ptr": "*fp32", "seed_ptr": "*i64",
        "offset_ptr": "*i64", "inv_t_ptr": "*fp32", "V": "i32", "stride_x": "i64",
        "inv_t": "fp32", "p_bits": "i64", "min_p_bits": "i64", "seed_scalar": "i64",
        "offset_scalar": "i64", "seed_stride": "i32", "offset_stride": "i32",
        "groups_per_program": "i32"}
TAIL = {"ws_i_ptr": "*i32", "ws_f_ptr": "*fp32", "token_ptr": "*i64", "rounds_ptr": "*i32"}
SHAPES = ((8, 2048, 2), (4, 1024, 4), (2, 1024, 4), (1, 1024, 4), (1, 512, 8))


def registers_and_barriers(fn, signature: dict, constexprs: dict, warps: int) -> tuple[int, int]:
    """(registers per thread, bar.sync count) of ``fn`` built for sm90."""
    src = triton.compiler.ASTSource(fn=fn, signature=signature, constexprs=constexprs)
    kernel = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
    cuobjdump = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin",
                             "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
        cubin.write(kernel.asm["cubin"])
        cubin.flush()
        usage = subprocess.run([cuobjdump, "-res-usage", cubin.name], capture_output=True,
                               text=True, check=True).stdout
    return int(re.search(r"REG:(\d+)", usage).group(1)), kernel.asm["ptx"].count("bar.sync")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", type=int, default=131072)
    args = ap.parse_args()
    print("warps  tile  tiles/group  groups  statistics (regs, bar.sync)  check (regs, bar.sync)")
    for warps, block, group in SHAPES:
        groups = -(-args.vocab // (block * group))
        flags = dict(HAS_P=True, P_ARRAY=False, HAS_MIN_P=False, MIN_P_ARRAY=False,
                     SEED_MODE=0, OFFSET_ARRAY=False, TEMP_ARRAY=False, BLOCK=block,
                     GROUP=group, NS_P2=1 << (groups - 1).bit_length(), AHEAD=1, ROW_AXIS=0)
        stats = registers_and_barriers(reject_split.reject_split_stats_kernel, {**HEAD, **TAIL},
                                       {**flags, "BOUND": True, "NEAR": 4.0}, warps)
        check = registers_and_barriers(reject_split.reject_split_check_kernel,
                                       {**HEAD, "phase": "i32", **TAIL},
                                       {**flags, "FINISH": False}, warps)
        print(f"{warps:>5}  {block:>4}  {group:>11}  {groups:>6}  {str(stats):>27}  "
              f"{str(check):>22}")


if __name__ == "__main__":
    main()
