"""Instructions per loop iteration of a top-p kernel as a GPU launch builds it, without a GPU.

Compiles one kernel of the top-p mask pipeline for sm90 (``triton.compile``; ptxas and
cuobjdump ship in the Triton wheel) with the constexprs and warps the launch table gives
(V, dtype, ``QRITA_LAUNCH_TABLE``), and with ``tt.divisibility = 16`` on every pointer and on
the 16-divisible integers (V, strides, segment length), as a launch on a GPU specialises them.
Without those attributes the compiler cannot prove a tile's loads aligned and emits one load
per entry (the thirty-second session's counts were made that way; BENCHMARKS.md, thirty-fourth
session). Prints registers, stack and the instructions of each loop (a backward branch), so a
change to a loop can be counted before it is timed.

Usage::

    python benchmarks/sass_loops.py --kernel compact --dtype float32
    python benchmarks/sass_loops.py --kernel compact --dtype bfloat16 --extra UNSWITCH=True,EXP2=True
    QRITA_LAUNCH_TABLE=widefixed=1x0 python benchmarks/sass_loops.py --kernel round
    QRITA_LAUNCH_TABLE=wideunswitch=1x0 python benchmarks/sass_loops.py --kernel compact --show
    QRITA_LAUNCH_TABLE=selblock=1024x0 python benchmarks/sass_loops.py --kernel select --dtype bfloat16
"""

from __future__ import annotations

import argparse
import ast
import collections
import inspect
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402

from qrita.backends.triton import launch, pipeline, wide  # noqa: E402

BIN = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
TYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def compile_as_launched(fn, signature: dict, constexprs: dict, options: dict,
                        divisible: set[str]):
    """``triton.compile`` for sm90 with tt.divisibility 16 on pointers and ``divisible`` ints."""
    names = list(inspect.signature(fn.fn).parameters)
    defaults = {n: p.default for n, p in inspect.signature(fn.fn).parameters.items()
                if p.default is not inspect.Parameter.empty}
    constexprs = {**{n: v for n, v in defaults.items() if n not in signature}, **constexprs}
    sig = {**signature, **{n: "constexpr" for n in constexprs}}
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n, ty in signature.items()
             if ty.startswith("*") or n in divisible}
    src = triton.compiler.ASTSource(fn=fn, signature=sig, constexprs=constexprs, attrs=attrs)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)


def loops(compiled) -> tuple[list[tuple[int, str]], list[tuple[int, int, int]], str]:
    """(instructions, loops as (first, last, length) indices, resource usage) of the SASS."""
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(compiled.asm["cubin"])
    sass = subprocess.run([f"{BIN}/cuobjdump", "-sass", f.name], capture_output=True,
                          text=True, check=True).stdout
    res = subprocess.run([f"{BIN}/cuobjdump", "-res-usage", f.name], capture_output=True,
                         text=True, check=True).stdout
    os.unlink(f.name)
    lines = []
    for line in sass.splitlines():
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if m:
            lines.append((int(m.group(1), 16), m.group(2)))
    index = {a: i for i, (a, _) in enumerate(lines)}
    found = []
    for i, (a, ins) in enumerate(lines):
        if "BRA" in ins:
            target = re.search(r"0x([0-9a-f]+)", ins.split("BRA")[1])
            if target and int(target.group(1), 16) <= a and int(target.group(1), 16) in index:
                start = index[int(target.group(1), 16)]
                if i > start:
                    found.append((start, i, i - start + 1))
    return lines, found, res


def _extra(text: str) -> dict:
    """``NAME=VALUE,...`` as constexprs, each value a Python literal (``True``, ``4``)."""
    pairs = (item.partition("=") for item in filter(None, text.split(",")))
    return {key.strip(): ast.literal_eval(value.strip()) for key, _, value in pairs}


def build(kernel: str, dtype: str, vocab: int, extra: dict):
    """The kernel as the pipeline launches it for a top-p mask (fp32: FLAT lanes etc.)."""
    torch_dtype = getattr(torch, dtype)
    cfg = launch._pipeline_config(vocab, torch_dtype, False,
                                  os.environ.get("QRITA_LAUNCH_TABLE", ""))
    plan = launch._plan(cfg, False, False, True, False, False, False, True, False)
    ty = TYPES[dtype]
    if kernel == "compact":
        kwargs = dict(plan["compact_True"])
        fn = wide.wide_compact_kernel
        sig = {"x_ptr": f"*{ty}", "row_i_ptr": "*i32", "row_f_ptr": "*fp32", "V": "i32",
               "stride_x": "i64", "seg_len": "i32", "cand_val_ptr": "*fp32",
               "cand_idx_ptr": "*i32", "seg_i_ptr": "*i32", "part_i_ptr": "*i32",
               "part_f_ptr": "*fp32", "miss_ptr": "*i32"}
    elif kernel == "cand":
        kwargs = dict(plan["candidates_False"])
        fn = pipeline.candidates_kernel
        sig = {"x_ptr": f"*{ty}", "k_ptr": "*i64", "p_ptr": "*fp32", "cutoff_ptr": "*i32",
               "V": "i32", "stride_x": "i64", "seg_len": "i32", "k_scalar": "i64",
               "p_scalar": "fp32", "row_i_ptr": "*i32", "cand_val_ptr": "*fp32",
               "cand_idx_ptr": "*i32", "seg_f_ptr": "*fp32", "seg_i_ptr": "*i32"}
    elif kernel == "band":
        kwargs = dict(plan["band"])
        fn = wide.wide_band_kernel
        sig = {"x_ptr": f"*{ty}", "row_i_ptr": "*i32", "row_f_ptr": "*fp32", "V": "i32",
               "stride_x": "i64", "max_band": "fp32"}
    elif kernel == "round":
        kwargs = dict(plan["round"])
        fn = wide.wide_round_kernel
        sig = {"x_ptr": f"*{ty}", "row_i_ptr": "*i32", "row_f_ptr": "*fp32", "V": "i32",
               "stride_x": "i64", "seg_len": "i32", "fit": "i32", "part_i_ptr": "*i32",
               "part_f_ptr": "*fp32", "miss_ptr": "*i32", "arrive_ptr": "*i32"}
    elif kernel == "search":
        kwargs = dict(plan["search_True"])
        fn = wide.wide_search_kernel
        sig = {"x_ptr": f"*{ty}", "cand_val_ptr": "*fp32", "cand_idx_ptr": "*i32",
               "seg_i_ptr": "*i32", "row_i_ptr": "*i32", "row_f_ptr": "*fp32",
               "part_i_ptr": "*i32", "part_f_ptr": "*fp32", "V": "i32", "stride_x": "i64",
               "stride_out": "i64", "fill": "fp32", "nseg": "i32", "out_ptr": f"*{ty}",
               "seg_before_ptr": "*i32", "miss_ptr": "*i32", "arrive_ptr": "*i32"}
    elif kernel == "select":  # top_k's selection write (top-k alone, small k: cap_small)
        small = launch.call_config(cfg, vocab, 50, None)
        kwargs = dict(BLOCK=cfg.block_select or cfg.block, CAP_SEG=small.cap_seg,
                      NSEG_P2=cfg.nseg_p2, SMALLEST=False, WITH_KEY=False,
                      num_warps=cfg.warps_stream)
        fn = pipeline.write_select_kernel
        sig = {"x_ptr": f"*{ty}", "cand_val_ptr": "*fp32", "cand_idx_ptr": "*i32",
               "seg_i_ptr": "*i32", "row_i_ptr": "*i32", "seg_before_ptr": "*i32", "V": "i32",
               "stride_x": "i64", "seg_len": "i32", "k": "i32", "sel_val_ptr": f"*{ty}",
               "sel_idx_ptr": "*i64", "sel_key_ptr": "*i32"}
    else:
        raise SystemExit(f"--kernel: compact, cand, band, round, search or select, not {kernel!r}")
    kwargs.update(extra)  # (launch options too: ``--extra maxnreg=64``)
    options = {key: kwargs.pop(key) for key in ("num_warps", "maxnreg") if key in kwargs}
    return (compile_as_launched(fn, sig, kwargs, options, {"V", "stride_x", "seg_len"}),
            {**kwargs, **options})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernel", default="compact",
                        help="compact (the wide band's), cand (pass A), band (its placement), "
                             "round (the 16-way rounds), search (the band's search) or select "
                             "(top_k's selection write, k = 50)")
    parser.add_argument("--dtype", default="float32", choices=sorted(TYPES))
    parser.add_argument("--vocab", type=int, default=131072)
    parser.add_argument("--extra", default="", help="constexpr overrides, NAME=VALUE,... (Python literals)")
    parser.add_argument("--show", action="store_true", help="print each loop's instructions")
    args = parser.parse_args(argv)
    compiled, kwargs = build(args.kernel, args.dtype, args.vocab, _extra(args.extra))
    lines, found, res = loops(compiled)
    regs = re.findall(r"REG:(\d+)", res)
    stack = re.findall(r"STACK:(\d+)", res)
    print(f"{args.kernel} {args.dtype} V={args.vocab} {kwargs}")
    print(f"registers {regs} stack {stack} instructions {len(lines)}")
    for start, end, length in found:
        body = [ins for _, ins in lines[start:end + 1]]
        ops = collections.Counter(i.split()[1] if i.startswith("@") else i.split()[0]
                                  for i in body)
        top = ", ".join(f"{op} {n}" for op, n in ops.most_common(6))
        print(f"loop at {start}: {length} instructions ({top})")
        if args.show:
            for address, ins in lines[start:end + 1]:
                print(f"  {address:05x} {ins}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
