"""Ahead-of-time compilation of every kernel variant for NVIDIA and AMD targets, without a GPU.

CI uses this to prove the kernels build for Hopper, Blackwell, MI300 and MI350
(``python -m qrita.backends.triton.aot``).

Every kernel is built for every target and every input dtype. For float32 every constexpr
variant the API launches is built. For the two largest kernels, the 16-bit dtypes split the
variants that differ only in switches outside the input's loads: the fused top-p sampler's
band stage with log-probabilities for bfloat16 and its rounds stage without them for float16
(``SAMPLER_VARIANTS_16``), and the one-launch selection with its in-kernel sort only (a
superset of the unsorted one); and the per-row search's first stage for top-k + top-p, which
reads only the float32 candidates, is built for float32 only. The sampler's four variants per
dtype were 2/3 of the build
time, and CI's two cores run this beside the interpreter tests (the whole run came within 5
minutes of CI's 90 at the tenth session).
"""

from __future__ import annotations

import concurrent.futures
import inspect
import os
import sys
import time

import triton
from triton.backends.compiler import GPUTarget

from qrita.backends.triton import (
    fused_sample,
    fused_select,
    fused_topp,
    hist_band,
    one_launch,
    philox,
    pipeline,
    reject_split,
    reject_topp,
    wide,
)

__all__ = ["TARGETS", "DTYPES", "ALL_VARIANTS_DTYPE", "SAMPLER_VARIANTS_16", "variants",
           "compile_all"]

TARGETS = {
    "sm90": GPUTarget("cuda", 90, 32),
    "sm100": GPUTarget("cuda", 100, 32),
    "gfx942": GPUTarget("hip", "gfx942", 64),
    "gfx950": GPUTarget("hip", "gfx950", 64),
}
DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}
ALL_VARIANTS_DTYPE = "float32"  # the dtype built with every constexpr variant (module docstring)
# (stage, log-probabilities) of the fused top-p sampler built for each 16-bit dtype
SAMPLER_VARIANTS_16 = {"bfloat16": (("band", True),), "float16": (("rounds", False),)}
FLAGS = ("HAS_K", "K_ARRAY", "HAS_P", "P_ARRAY")


def variants():
    """(name, flags) of the launches the API makes: top-k alone (scalar k), top-p alone (per-row
    p), both (per-row k and p), and selection (top_k, both modes)."""
    yield "mask_k", dict(HAS_K=True, K_ARRAY=False, HAS_P=False, P_ARRAY=False, SMALLEST=False,
                         SELECT=False)
    yield "mask_p", dict(HAS_K=False, K_ARRAY=False, HAS_P=True, P_ARRAY=True, SMALLEST=False,
                         SELECT=False)
    yield "mask_kp", dict(HAS_K=True, K_ARRAY=True, HAS_P=True, P_ARRAY=True, SMALLEST=False,
                          SELECT=False)
    yield "select_smallest", dict(HAS_K=True, K_ARRAY=False, HAS_P=False, P_ARRAY=False,
                                  SMALLEST=True, SELECT=True)


def _compile(fn, signature, constexprs, target, num_warps):
    # a constexpr left at its default must still be named: ASTSource binds only what it is given
    defaults = {name: param.default for name, param in inspect.signature(fn.fn).parameters.items()
                if param.default is not inspect.Parameter.empty}
    constexprs = {**{name: value for name, value in defaults.items() if name not in signature},
                  **constexprs}
    sig = dict(signature)
    sig.update({name: "constexpr" for name in constexprs})
    src = triton.compiler.ASTSource(fn=fn, signature=sig, constexprs=constexprs)
    return triton.compile(src, target=target, options={"num_warps": num_warps})


def compile_all(target: GPUTarget, dtype: str, flags: dict, *, block: int = 2048,
                cap_seg: int = 128, nseg_p2: int = 32, sample: int = 1024):
    """Compile the pipeline's kernels for one variant; returns {kernel name: compiled}."""
    ty = DTYPES[dtype]
    kp = {name: flags[name] for name in FLAGS}
    out = {}
    out["cutoff"] = _compile(pipeline.cutoff_kernel, {
        "x_ptr": f"*{ty}", "k_ptr": "*i64", "p_ptr": "*fp32", "V": "i32", "stride_x": "i64",
        "k_scalar": "i64", "p_scalar": "fp32", "max_cands": "fp32", "cutoff_ptr": "*i32"},
        dict(kp, SMALLEST=flags["SMALLEST"], SAMPLE=sample, OVERSAMPLE=4.0), target, 4)
    cand_sig = {
        "x_ptr": f"*{ty}", "k_ptr": "*i64", "p_ptr": "*fp32", "cutoff_ptr": "*i32", "V": "i32",
        "stride_x": "i64", "seg_len": "i32", "k_scalar": "i64", "p_scalar": "fp32",
        "row_i_ptr": "*i32", "cand_val_ptr": "*fp32", "cand_idx_ptr": "*i32",
        "seg_f_ptr": "*fp32", "seg_i_ptr": "*i32"}
    # with top-k: the first pass (may choose retries) and the retry pass (mode-5 rows only)
    for again in (False, True) if flags["HAS_K"] else (False,):
        out[f"candidates_{again}"] = _compile(pipeline.candidates_kernel, cand_sig,
            dict(kp, SMALLEST=flags["SMALLEST"], BLOCK=1024, CAP_SEG=cap_seg, NSEG_P2=nseg_p2,
                 SPARSE=8, ONLY_RETRY=again, LEAN=flags["HAS_P"]), target, 4)
        if flags["HAS_P"] and not flags["HAS_K"] and not again and dtype == ALL_VARIANTS_DTYPE:
            # pass A's online masses (the launch table's ``lean=0x0``; lean is the default)
            out["candidates_online"] = _compile(pipeline.candidates_kernel, cand_sig,
                dict(kp, SMALLEST=False, BLOCK=1024, CAP_SEG=cap_seg, NSEG_P2=nseg_p2,
                     SPARSE=8, ONLY_RETRY=False, LEAN=False, AHEAD=2), target, 4)
        if flags["HAS_K"] and not flags["HAS_P"] and not again and dtype == ALL_VARIANTS_DTYPE:
            # top-k alone at small batches: pass A's own tile and warps, prefix sums only (the
            # launch table's ``candsmall``, ``sparsesmall``)
            out["candidates_small"] = _compile(pipeline.candidates_kernel, cand_sig,
                dict(kp, SMALLEST=flags["SMALLEST"], BLOCK=2048, CAP_SEG=cap_seg,
                     NSEG_P2=nseg_p2, SPARSE=0, ONLY_RETRY=False, LEAN=False), target, 8)
        if flags["HAS_K"] and not flags["HAS_P"] and not again:
            # top-k alone: a segment's largest key over its candidates only (the launch table's
            # ``candtop``, the default; the 16-bit rows are what it is for, so every dtype)
            out["candidates_top"] = _compile(pipeline.candidates_kernel, cand_sig,
                dict(kp, SMALLEST=flags["SMALLEST"], BLOCK=128, CAP_SEG=cap_seg,
                     NSEG_P2=nseg_p2, SPARSE=8, ONLY_RETRY=False, LEAN=False, CAND_TOP=True),
                target, 1)
        if not again:
            # two tiles a turn in their own load slots (the launch table's ``slots``, the
            # default), as the GPU table launches it: one warp, 128-entry tiles, every dtype;
            # and four slots
            for slots in (2, 4) if dtype == ALL_VARIANTS_DTYPE else (2,):
                out[f"candidates_slots{slots}"] = _compile(pipeline.candidates_kernel, cand_sig,
                    dict(kp, SMALLEST=flags["SMALLEST"], BLOCK=128, CAP_SEG=cap_seg,
                         NSEG_P2=nseg_p2, SPARSE=8, ONLY_RETRY=False, LEAN=flags["HAS_P"],
                         CAND_TOP=flags["HAS_K"] and not flags["HAS_P"], SLOTS=slots),
                    target, 1)
        stages = (1, 2) if flags["HAS_K"] and flags["HAS_P"] else (0,)
        if dtype != ALL_VARIANTS_DTYPE:  # the first stage never loads x: dtype-neutral code
            stages = tuple(stage for stage in stages if stage != 1)
        for stage in stages:
            out[f"threshold_{again}_{stage}"] = _compile(pipeline.threshold_kernel, {
                "x_ptr": f"*{ty}", "k_ptr": "*i64", "p_ptr": "*fp32", "cand_val_ptr": "*fp32",
                "cand_idx_ptr": "*i32", "seg_f_ptr": "*fp32", "seg_i_ptr": "*i32", "V": "i32",
                "stride_x": "i64", "stride_out": "i64", "k_scalar": "i64", "p_scalar": "fp32",
                "fill": "fp32", "nseg": "i32", "out_ptr": f"*{ty}",
                "sel_val_ptr": f"*{ty}",
                "sel_idx_ptr": "*i64", "row_i_ptr": "*i32", "row_f_ptr": "*fp32",
                "seg_before_ptr": "*i32", "cutoff_ptr": "*i32"},
                dict(kp, SMALLEST=flags["SMALLEST"], SELECT=flags["SELECT"],
                     WIDE=flags["HAS_P"] and not flags["SELECT"], BLOCK=block, CAP_SEG=cap_seg,
                     NSEG_P2=nseg_p2, DENSE=1024, SAMPLE=sample,
                     RETRY=flags["HAS_K"] and not again, ONLY_RETRY=again, STAGE=stage,
                     # top-p alone in float32: the wide stage's fixed-point form (``widefixed``;
                     # its one store), the other variants the float32 form
                     WIDE_FIXED=(flags["HAS_P"] and not flags["HAS_K"] and not flags["SELECT"]
                                 and dtype == ALL_VARIANTS_DTYPE)),
                target, 8)
    # the one-launch kernels' pass A as the launch table runs it on a GPU (``candone``,
    # ``sparseone``: 2048-entry tiles, prefix sums only)
    one = dict(SAMPLE=sample, OVERSAMPLE=4.0, BLOCK=block, BLOCK_CAND=2048, CAP_SEG=cap_seg,
               NSEG_P2=nseg_p2, SPARSE=0, DENSE=1024)
    if flags["HAS_K"] and not flags["HAS_P"] and not flags["SELECT"]:
        out["one_launch"] = _compile(one_launch.one_launch_topk_mask_kernel, {
            "x_ptr": f"*{ty}", "k_ptr": "*i64", "V": "i32", "stride_x": "i64",
            "stride_out": "i64", "seg_len": "i32", "k_scalar": "i64", "fill": "fp32",
            "max_cands": "fp32", "ws_i_ptr": "*i32", "ws_f_ptr": "*fp32", "out_ptr": f"*{ty}"},
            dict(one, K_ARRAY=flags["K_ARRAY"]), target, 8)
    if flags["SELECT"]:
        for sorted_ in (False, True) if dtype == ALL_VARIANTS_DTYPE else (True,):
            out[f"one_launch_select_{sorted_}"] = _compile(one_launch.one_launch_select_kernel, {
                "x_ptr": f"*{ty}", "V": "i32", "stride_x": "i64", "seg_len": "i32", "k": "i32",
                "max_cands": "fp32", "ws_i_ptr": "*i32", "ws_f_ptr": "*fp32",
                "sel_val_ptr": f"*{ty}", "sel_idx_ptr": "*i64"},
                dict(one, SMALLEST=flags["SMALLEST"], SORTED=sorted_,
                     K_P2=one_launch.SORT_MAX if sorted_ else 16), target, 8)
        for sorted_ in (False, True) if dtype == ALL_VARIANTS_DTYPE else (True,):
            # ``top_k``'s search writing the selection (the launch table's ``selfuse``)
            out[f"threshold_select_{sorted_}"] = _compile(fused_select.threshold_select_kernel, {
                "x_ptr": f"*{ty}", "cand_val_ptr": "*fp32", "cand_idx_ptr": "*i32",
                "seg_f_ptr": "*fp32", "seg_i_ptr": "*i32", "V": "i32", "stride_x": "i64",
                "k": "i64", "nseg": "i32", "sel_val_ptr": f"*{ty}", "sel_idx_ptr": "*i64",
                "row_i_ptr": "*i32", "row_f_ptr": "*fp32", "seg_before_ptr": "*i32"},
                dict(SMALLEST=flags["SMALLEST"], SORTED=sorted_,
                     K_P2=one_launch.SORT_MAX if sorted_ else 16, BLOCK=block, CAP_SEG=cap_seg,
                     NSEG_P2=nseg_p2, DENSE=1024, SAMPLE=sample), target, 8)
        out["uniforms"] = _compile(philox._uniform_kernel, {
            "seed_ptr": "*i64", "offset_ptr": "*i64", "n": "i32", "seed_scalar": "i64",
            "offset_scalar": "i64", "seed_stride": "i32", "offset_stride": "i32",
            "out_ptr": "*fp32"},
            dict(SEED_MODE=2, OFFSET_ARRAY=True, BLOCK=128), target, 4)
        out["sort_selection"] = _compile(one_launch.sort_selection_kernel, {
            "x_ptr": f"*{ty}", "stride_x": "i64", "k": "i32", "sel_val_ptr": f"*{ty}",
            "sel_idx_ptr": "*i64"},
            dict(SMALLEST=flags["SMALLEST"], K_P2=one_launch.SORT_MAX), target, 8)
        out["fused_sample"] = _compile(fused_sample.fused_topk_sample_kernel, {
            "x_ptr": f"*{ty}", "t_ptr": "*fp32", "p_ptr": "*fp32", "min_p_ptr": "*fp64",
            "u_ptr": "*fp32", "V": "i32", "stride_x": "i64", "seg_len": "i32", "k": "i32",
            "max_cands": "fp32", "t_bits": "i64", "p_bits": "i64", "min_p_bits": "i64",
            "ws_i_ptr": "*i32", "ws_f_ptr": "*fp32", "sel_val_ptr": f"*{ty}",
            "sel_idx_ptr": "*i64", "token_ptr": "*i64", "logp_ptr": "*fp32"},
            dict(one, T_ARRAY=False, HAS_P=True, P_ARRAY=True, HAS_MIN_P=True,
                 MIN_P_ARRAY=False, K_P2=one_launch.SORT_MAX), target, 8)
        out["selection_sample"] = _compile(fused_sample.selection_sample_kernel, {
            "x_ptr": f"*{ty}", "t_ptr": "*fp32", "p_ptr": "*fp32", "min_p_ptr": "*fp64",
            "u_ptr": "*fp32", "stride_x": "i64", "k": "i32", "t_bits": "i64", "p_bits": "i64",
            "min_p_bits": "i64", "sel_val_ptr": f"*{ty}", "sel_idx_ptr": "*i64",
            "token_ptr": "*i64", "logp_ptr": "*fp32"},
            dict(T_ARRAY=False, HAS_P=True, P_ARRAY=True, HAS_MIN_P=True, MIN_P_ARRAY=False,
                 K_P2=one_launch.SORT_MAX), target, 8)
        for logprob in (False, True):
            for stage, hist in (("band", True), ("rounds", False)):
                if (dtype != ALL_VARIANTS_DTYPE
                        and (stage, logprob) not in SAMPLER_VARIANTS_16[dtype]):
                    continue
                out[f"fused_topp_{stage}_{logprob}"] = _compile(
                    fused_topp.fused_topp_sample_kernel, {
                        "x_ptr": f"*{ty}", "p_ptr": "*fp32", "u_ptr": "*fp32", "V": "i32",
                        "stride_x": "i64", "inv_t": "fp32", "t_bits": "i64", "p_bits": "i64",
                        "counter_ptr": "*i32", "cand_val_ptr": "*fp32", "cand_idx_ptr": "*i32",
                        "table_piv_ptr": "*i64", "table_cnt_ptr": "*i32",
                        "table_mass_ptr": "*fp64", "token_ptr": "*i64", "logp_ptr": "*fp32",
                        "rounds_ptr": "*i32", "done_ptr": "*i32"},
                    dict(HAS_P=True, P_ARRAY=logprob, LOGPROB=logprob, NP=4, CAP=1024,
                         BLOCK=1024, FOLD=8, MAX_ROUNDS=24, TABLE_ROUNDS=8, HIST=hist, NB1=64,
                         NB2=128, SMALL=256, HBLOCK=4096, STEPS=8, ROUNDS=not hist,
                         SKIP_DONE=not hist, PHASES=9, HMASK=False), target, 8)
    # the wide stage's kernels take no flags: built once, with top-p alone
    if flags["HAS_P"] and not flags["SELECT"] and not flags["HAS_K"]:
        # the rejection draw of top-p (qrita.sample's top-k-off rows), per-row temperatures
        out["reject_topp"] = _compile(reject_topp.reject_topp_sample_kernel, {
            "x_ptr": f"*{ty}", "p_ptr": "*fp32", "min_p_ptr": "*fp32", "seed_ptr": "*i64",
            "offset_ptr": "*i64", "inv_t_ptr": "*fp32", "V": "i32", "stride_x": "i64", "inv_t": "fp32",
            "p_bits": "i64", "min_p_bits": "i64", "seed_scalar": "i64", "offset_scalar": "i64",
            "seed_stride": "i32", "offset_stride": "i32", "token_ptr": "*i64",
            "rounds_ptr": "*i32"},
            dict(HAS_P=True, P_ARRAY=True, HAS_MIN_P=True, MIN_P_ARRAY=False, SEED_MODE=1,
                 OFFSET_ARRAY=True, TEMP_ARRAY=True, BLOCK=2048, GROUP=8, NS_P2=8), target, 8)
        # its small-batch split (rows over programs): group statistics, checks (the last finishes)
        head = {
            "x_ptr": f"*{ty}", "p_ptr": "*fp32", "min_p_ptr": "*fp32", "seed_ptr": "*i64",
            "offset_ptr": "*i64", "inv_t_ptr": "*fp32", "V": "i32", "stride_x": "i64",
            "inv_t": "fp32", "p_bits": "i64", "min_p_bits": "i64", "seed_scalar": "i64",
            "offset_scalar": "i64", "seed_stride": "i32", "offset_stride": "i32",
            "groups_per_program": "i32"}
        split_flags = dict(HAS_P=True, P_ARRAY=True, HAS_MIN_P=True, MIN_P_ARRAY=False,
                           SEED_MODE=1, OFFSET_ARRAY=True, TEMP_ARRAY=True, BLOCK=2048, GROUP=2,
                           NS_P2=32, AHEAD=1, ROW_AXIS=0)
        tail = {"ws_i_ptr": "*i32", "ws_f_ptr": "*fp32", "token_ptr": "*i64", "rounds_ptr": "*i32"}
        out["reject_split_stats"] = _compile(reject_split.reject_split_stats_kernel,
                                             {**head, **tail},
                                             {**split_flags, "BOUND": True, "NEAR": 4.0},
                                             target, 8)
        for finish in (False, True):
            out[f"reject_split_check_{finish}"] = _compile(
                reject_split.reject_split_check_kernel, {**head, "phase": "i32", **tail},
                {**split_flags, "FINISH": finish}, target, 8)

        # the keyed band of 16-bit rows (the launch table's key_shift)
        key_shift = {"bfloat16": 16, "float16": 13}.get(dtype, 0)
        out["wide_band"] = _compile(wide.wide_band_kernel, {
            "x_ptr": f"*{ty}", "row_i_ptr": "*i32", "row_f_ptr": "*fp32", "V": "i32",
            "stride_x": "i64", "max_band": "fp32"},
            # (bfloat16: its narrow keyed bands, ``keynarrow``)
            dict(SAMPLE=2 * sample, KEY_SHIFT=key_shift,
                 NARROW=8 if dtype == "bfloat16" else 0),
            target, 4)
        round_sig = {
            "x_ptr": f"*{ty}", "row_i_ptr": "*i32", "row_f_ptr": "*fp32", "V": "i32",
            "stride_x": "i64", "seg_len": "i32", "fit": "i32", "part_i_ptr": "*i32",
            "part_f_ptr": "*fp32", "miss_ptr": "*i32", "arrive_ptr": "*i32"}
        out["wide_round"] = _compile(wide.wide_round_kernel, round_sig,
            dict(BLOCK=128, LISTED=True, MERGE=True, NSEG_P2=nseg_p2, AHEAD=4), target, 4)
        if dtype == ALL_VARIANTS_DTYPE:
            # the accumulators as (16 pivots, tile) (``roundrows``), one row per program
            out["wide_round_pivot_rows"] = _compile(wide.wide_round_kernel, round_sig,
                dict(BLOCK=128, LISTED=False, MERGE=False, NSEG_P2=nseg_p2, AHEAD=1,
                     PIVOT_ROWS=True), target, 4)
        if dtype == ALL_VARIANTS_DTYPE:
            # fixed-point masses (``widefixed``): the rounds' int64 accumulators
            out["wide_round_fixed"] = _compile(wide.wide_round_kernel, round_sig,
                dict(BLOCK=128, LISTED=False, MERGE=True, NSEG_P2=nseg_p2, AHEAD=1,
                     FIXED=True), target, 4)
            # and their per-row totals by integer atomics (``roundatomic``), listed
            out["wide_round_atomic"] = _compile(wide.wide_round_kernel, round_sig,
                dict(BLOCK=128, LISTED=True, MERGE=False, NSEG_P2=nseg_p2, AHEAD=1,
                     FIXED=True, ATOMIC=True), target, 4)
        for fixed, atomic in (((False, False), (True, False), (True, True))
                              if dtype == ALL_VARIANTS_DTYPE else ((False, False),)):
            name = "wide_narrow" + ("_fixed" if fixed else "") + ("_atomic" if atomic else "")
            out[name] = _compile(wide.wide_narrow_kernel, {
                "row_i_ptr": "*i32", "row_f_ptr": "*fp32", "part_i_ptr": "*i32",
                "part_f_ptr": "*fp32", "miss_ptr": "*i32", "nseg": "i32", "fit": "i32"},
                dict(NSEG_P2=nseg_p2, LISTED=True, FIXED=fixed, ATOMIC=atomic), target, 4)
        for merge in (False, True):
            out["hist_band_count" + ("_merge" if merge else "")] = _compile(
                hist_band.hist_band_count_kernel, {
                    "x_ptr": f"*{ty}", "row_i_ptr": "*i32", "row_f_ptr": "*fp32", "V": "i32",
                    "stride_x": "i64", "seg_len": "i32", "limit": "i32",
                    "bin_counts_ptr": "*i32", "arrivals_ptr": "*i32"},
                dict(NB=512, BLOCK=8192, MERGE=merge, STEPS=10), target, 8)
        out["hist_band_merge"] = _compile(hist_band.hist_band_merge_kernel, {
            "row_i_ptr": "*i32", "row_f_ptr": "*fp32", "bin_counts_ptr": "*i32", "V": "i32",
            "limit": "i32"}, dict(NB=512, STEPS=10), target, 4)
        compact_sig = {
            "x_ptr": f"*{ty}", "row_i_ptr": "*i32", "row_f_ptr": "*fp32", "V": "i32",
            "stride_x": "i64", "seg_len": "i32", "cand_val_ptr": "*fp32",
            "cand_idx_ptr": "*i32", "seg_i_ptr": "*i32", "part_i_ptr": "*i32",
            "part_f_ptr": "*fp32", "miss_ptr": "*i32"}
        for band in (True, False):
            tag = "_band" if band else ""
            out["wide_compact" + tag] = _compile(wide.wide_compact_kernel, compact_sig,
                dict(BLOCK=1024, CAP_SEG=cap_seg, NSEG_P2=nseg_p2, SPARSE=8, BAND=band,
                     FLAT=dtype == "float32",  # FLAT lanes: the float32 table's (wide_flat)
                     KEY_SHIFT=key_shift if band else 0, LISTED=not band,
                     AHEAD=1 if band else 3),
                target, 4)
            if not band and dtype == ALL_VARIANTS_DTYPE:
                # the interval tests by float compares (``widelean``) after the rounds (the
                # 16-bit loads build in the band's variant below)
                out["wide_compact_lean"] = _compile(wide.wide_compact_kernel, compact_sig,
                    dict(BLOCK=128, CAP_SEG=cap_seg, NSEG_P2=nseg_p2, SPARSE=8, BAND=False,
                         FLAT=dtype == "float32", KEY_SHIFT=0, LISTED=True, AHEAD=3,
                         LEAN=True),
                    target, 2)
            if band:
                # the append positions by one packed scan per tile (``widepacked``) and the
                # interval tests by float compares (``widelean``), in the one-warp tiles of
                # the GPU table; with both loops (``wideunswitch``) and exp2 (``wideexp2``)
                out["wide_compact_band_packed_lean"] = _compile(wide.wide_compact_kernel, compact_sig,
                    dict(BLOCK=128 if dtype == "float32" else 256, CAP_SEG=cap_seg,
                         NSEG_P2=nseg_p2, SPARSE=0, BAND=True, FLAT=dtype == "float32",
                         KEY_SHIFT=key_shift, LISTED=False, AHEAD=1, PACKED=True,
                         LEAN=True, UNSWITCH=True, EXP2=True),
                    target, 1)
                if dtype != "float16":
                    # fixed-point masses (``widefixed``): float32's compaction, bfloat16's
                    # keyed count (float16's shares its code), with its narrow bands' count
                    # (``keynarrow``)
                    out["wide_compact_band_fixed"] = _compile(wide.wide_compact_kernel,
                        compact_sig,
                        dict(BLOCK=128 if dtype == "float32" else 256, CAP_SEG=cap_seg,
                             NSEG_P2=nseg_p2, SPARSE=0, BAND=True, FLAT=dtype == "float32",
                             KEY_SHIFT=key_shift, LISTED=False, AHEAD=1, PACKED=True,
                             LEAN=True, UNSWITCH=True, FIXED=True,
                             NARROW=8 if dtype == "bfloat16" else 0),
                        target, 1)
                    # and with two tiles a turn in their own load slots (``widepaired``)
                    out["wide_compact_band_paired"] = _compile(wide.wide_compact_kernel,
                        compact_sig,
                        dict(BLOCK=128 if dtype == "float32" else 256, CAP_SEG=cap_seg,
                             NSEG_P2=nseg_p2, SPARSE=0, BAND=True, FLAT=dtype == "float32",
                             KEY_SHIFT=key_shift, LISTED=False, PACKED=True,
                             LEAN=True, UNSWITCH=True, FIXED=True, PAIRED=True),
                        target, 1)
            # fixed-point masses (``widefixed``): the band's search (bfloat16: its keyed
            # finish) and, float32, the search after the rounds with its full-row fallback
            fixed_too = dtype == ALL_VARIANTS_DTYPE or (band and dtype == "bfloat16")
            for fixed in (False, True) if fixed_too else (False,):
                out["wide_search" + tag + ("_fixed" if fixed else "")] = _compile(
                    wide.wide_search_kernel, {
                        "x_ptr": f"*{ty}", "cand_val_ptr": "*fp32", "cand_idx_ptr": "*i32",
                        "seg_i_ptr": "*i32", "row_i_ptr": "*i32", "row_f_ptr": "*fp32",
                        "part_i_ptr": "*i32", "part_f_ptr": "*fp32", "V": "i32",
                        "stride_x": "i64", "stride_out": "i64", "fill": "fp32", "nseg": "i32",
                        "out_ptr": f"*{ty}", "seg_before_ptr": "*i32", "miss_ptr": "*i32",
                        "arrive_ptr": "*i32"},
                    dict(BLOCK=block, CAP_SEG=cap_seg, NSEG_P2=nseg_p2, BAND=band,
                         KEY_SHIFT=key_shift if band else 0, LISTED=not band, FIXED=fixed),
                    target, 8)
    common = {"x_ptr": f"*{ty}", "cand_val_ptr": "*fp32", "cand_idx_ptr": "*i32",
              "seg_i_ptr": "*i32", "row_i_ptr": "*i32", "seg_before_ptr": "*i32", "V": "i32",
              "stride_x": "i64", "seg_len": "i32"}
    if flags["SELECT"]:
        out["write_select"] = _compile(pipeline.write_select_kernel, dict(
            common, k="i32", sel_val_ptr=f"*{ty}", sel_idx_ptr="*i64", sel_key_ptr="*i32"),
            dict(BLOCK=block, CAP_SEG=cap_seg, NSEG_P2=nseg_p2, SMALLEST=flags["SMALLEST"],
                 WITH_KEY=True),
            target, 4)
    else:
        sig = dict(common, stride_out="i64", fill="fp32", out_ptr=f"*{ty}")
        sig = {k: sig[k] for k in ["x_ptr", "cand_val_ptr", "cand_idx_ptr", "seg_i_ptr",
                                   "row_i_ptr", "seg_before_ptr", "V", "stride_x", "stride_out",
                                   "seg_len", "fill", "out_ptr"]}
        out["write_mask"] = _compile(pipeline.write_mask_kernel, sig,
                                     dict(INPLACE=False, BLOCK=block, CAP_SEG=cap_seg,
                                          NSEG_P2=nseg_p2), target, 4)
        if flags["HAS_P"] and not flags["HAS_K"]:
            # wide rows' segments written without ranking ties (``writecut``), in place
            out["write_mask_cut"] = _compile(pipeline.write_mask_kernel, sig,
                                             dict(INPLACE=True, BLOCK=1024, CAP_SEG=cap_seg,
                                                  NSEG_P2=nseg_p2, CUT=True), target, 4)
    return out


def _one(job):
    name, dtype, (vname, flags) = job
    t0 = time.time()
    kernels = compile_all(TARGETS[name], dtype, flags)
    sizes = []
    for kname, kernel in kernels.items():
        binary = "cubin" if "cubin" in kernel.asm else "hsaco"
        sizes.append(f"{kname}={len(kernel.asm[binary])}")
    return f"built {name:7s} {dtype:9s} {vname:16s} {' '.join(sizes)} bytes {time.time() - t0:.1f}s"


def main(argv: list[str] | None = None) -> int:
    targets = (argv if argv is not None else sys.argv[1:]) or list(TARGETS)
    jobs = [(name, dtype, v) for name in targets for dtype in DTYPES for v in variants()]
    workers = max(1, min(len(jobs), os.cpu_count() or 1))
    with concurrent.futures.ProcessPoolExecutor(workers) as pool:
        for line in pool.map(_one, jobs):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
