"""Where the wide band's per-segment pass spends its time on a GPU: a probe, not the library.

The band compaction (float32) and the keyed count (16-bit rows) read every entry of a row once
more after pass A. On the H100 they run far below the copy bandwidth (B = 1024, V = 131072,
zipf topp0.9: fp32 compaction 285 µs for 512 MiB, bf16 keyed count 382 µs for 256 MiB), and 6%
fewer instructions did not change their time (BENCHMARKS.md forty-ninth session). This probe
runs one simplified kernel over the same grid (B x 16 segments of 8192 entries, one program
each) with its work added step by step, so each step's cost shows:

- ``read``: the loads and a float sum per lane (the floor of this grid and tile);
- ``mass``: + the band / above tests, exp, the fixed-point weight and its int64 sum above;
- ``hist``: + the band's 64-bin value histogram, masked (the keyed count's form);
- ``histdummy``: the histogram unmasked, out-of-band entries counted in a 65th..128th bin;
- ``histonly``: the masked histogram without the mass;
- ``count``: the tests and the count above, no exp, no histogram;
- ``append``: the mass above and the band's mass, and the band's entries appended to 256 slots
  per segment by the library's prefix-sum append (``primitives.compact_tile``; the float32
  band compaction's form without its FLAT lanes and packed scan); ``appendonly``: without
  the masses;
- ``packed``: the mass above and the band's values counted in 4-bit lane fields (the narrow
  keyed count, ``keynarrow``; meaningful with ``--band-values 8``);
- ``packedwords``: the same in ceil(band values / 8) words per lane (up to 8: bands of up to
  64 values, as Gaussian bf16 rows' 21-39 need).

The band is placed on each row's true top-p 0.9 boundary: ``--band-values N`` values from
N // 2 below it (64 by default, as the keyed band), or ``--band-rank R`` entries by rank around
it (float32's compacted band holds ~3000 a row). Prints µs (do_bench median) and GB/s per (step, tile, warps)::

    python benchmarks/keyed_probe.py --dtype bfloat16 --batch 1024
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from qrita.backends.triton.primitives import compact_tile  # noqa: E402
from qrita.testing import generators  # noqa: E402

STEPS = {"read": 0, "mass": 1, "hist": 2, "histdummy": 3, "histonly": 4, "count": 5,
         "append": 6, "appendonly": 7, "packed": 8, "packedwords": 9}


@triton.jit
def probe_kernel(x_ptr, first_ptr, row_max_ptr, band_ptr, V, seg_len, out_i_ptr, out_f_ptr,
                 slot_val_ptr, slot_idx_ptr,
                 BLOCK: tl.constexpr, STEP: tl.constexpr, KEY_SHIFT: tl.constexpr,
                 CAP_SEG: tl.constexpr, WORDS: tl.constexpr = 1):
    row = tl.program_id(0)
    seg = tl.program_id(1)
    nseg = tl.num_programs(1)
    row64 = row.to(tl.int64)
    row_x = x_ptr + row64 * V
    first_value = tl.load(first_ptr + row)  # the band's first value index (key >> KEY_SHIFT)
    row_max = tl.load(row_max_ptr + row)
    first_f = tl.load(band_ptr + 2 * row)  # the band [first_f, after_f)
    after_f = tl.load(band_ptr + 2 * row + 1)
    slots = (row64 * nseg + seg) * CAP_SEG
    count = seg * 0
    lane_band = tl.zeros([BLOCK], tl.int64)
    lanes = tl.arange(0, BLOCK)
    start = seg * seg_len
    lane_sum = tl.zeros([BLOCK], tl.float32)
    lane_above = tl.zeros([BLOCK], tl.int32)
    lane_mass = tl.zeros([BLOCK], tl.int64)
    counts = tl.zeros([64], tl.int32)
    counts2 = tl.zeros([128], tl.int32)
    lane_packed = tl.zeros([BLOCK], tl.uint32)
    word1 = tl.zeros([BLOCK], tl.uint32)
    word2 = tl.zeros([BLOCK], tl.uint32)
    word3 = tl.zeros([BLOCK], tl.uint32)
    word4 = tl.zeros([BLOCK], tl.uint32)
    word5 = tl.zeros([BLOCK], tl.uint32)
    word6 = tl.zeros([BLOCK], tl.uint32)
    word7 = tl.zeros([BLOCK], tl.uint32)
    for off in range(0, seg_len, BLOCK):
        offs = start + off + lanes
        x = tl.load(row_x + offs, mask=offs < V, other=float("nan")).to(tl.float32)
        if STEP == 0:
            lane_sum += x
        else:
            inside = (x >= first_f) & (x < after_f)
            above = x >= after_f
            lane_above += above.to(tl.int32)
            if (STEP == 1) | (STEP == 2) | (STEP == 3):
                w = tl.exp(x - row_max)
                lane_mass += tl.where(above, (w * 1099511627776.0).to(tl.int64), 0)
            if (STEP == 6) | (STEP == 7):  # the band's entries appended to the slots
                if STEP == 6:
                    w = tl.exp(x - row_max)
                    fixed = (w * 1099511627776.0).to(tl.int64)
                    lane_mass += tl.where(above, fixed, 0)
                    lane_band += tl.where(inside, fixed, 0)
                n_tile = tl.sum(inside.to(tl.int32), axis=0)
                if n_tile > 0:  # (the library's append, by a prefix sum: SPARSE 0)
                    compact_tile(x, start + off, inside, lanes, n_tile, count, row_x,
                                 slot_val_ptr + slots, slot_idx_ptr + slots, BLOCK, CAP_SEG, 0)
                count += n_tile
            if STEP == 8:  # the narrow count: 4-bit fields per lane (bands of <= 8 values)
                bits = tl.where(x == 0.0, 0.0, x).to(tl.int32, bitcast=True)
                key = bits ^ ((bits >> 31) & 0x7FFFFFFF)
                field = (((key >> KEY_SHIFT) - first_value) * 4).to(tl.uint32)
                lane_packed += tl.where(inside, tl.full([BLOCK], 1, tl.uint32) << field, 0)
                w = tl.exp(x - row_max)
                lane_mass += tl.where(above, (w * 1099511627776.0).to(tl.int64), 0)
            if STEP == 9:  # 4-bit fields in WORDS words per lane: bands of <= 8 * WORDS values
                bits = tl.where(x == 0.0, 0.0, x).to(tl.int32, bitcast=True)
                key = bits ^ ((bits >> 31) & 0x7FFFFFFF)
                value = (key >> KEY_SHIFT) - first_value
                one = tl.where(inside, tl.full([BLOCK], 1, tl.uint32) << ((value & 7) * 4).to(
                    tl.uint32), 0)
                word = value >> 3
                lane_packed += tl.where(word == 0, one, 0)
                if WORDS > 1:
                    word1 += tl.where(word == 1, one, 0)
                if WORDS > 2:
                    word2 += tl.where(word == 2, one, 0)
                if WORDS > 3:
                    word3 += tl.where(word == 3, one, 0)
                if WORDS > 4:
                    word4 += tl.where(word == 4, one, 0)
                if WORDS > 5:
                    word5 += tl.where(word == 5, one, 0)
                if WORDS > 6:
                    word6 += tl.where(word == 6, one, 0)
                if WORDS > 7:
                    word7 += tl.where(word == 7, one, 0)
                w = tl.exp(x - row_max)
                lane_mass += tl.where(above, (w * 1099511627776.0).to(tl.int64), 0)
            if (STEP == 2) | (STEP == 4) | (STEP == 3):
                bits = tl.where(x == 0.0, 0.0, x).to(tl.int32, bitcast=True)
                key = bits ^ ((bits >> 31) & 0x7FFFFFFF)
                vidx = (key >> KEY_SHIFT) - first_value
                if STEP == 3:
                    counts2 += tl.histogram(tl.where(inside, vidx, 64 + (lanes & 63)), 128)
                else:
                    counts += tl.histogram(vidx, 64, mask=inside)
    slot = row64 * nseg + seg
    tl.store(out_f_ptr + slot, tl.sum(lane_sum, axis=0))
    tl.store(out_i_ptr + slot * 4 + 0, tl.sum(lane_above, axis=0).to(tl.int64))
    tl.store(out_i_ptr + slot * 4 + 1, tl.sum(lane_mass, axis=0))
    tl.store(out_i_ptr + slot * 4 + 2, tl.sum(counts, axis=0).to(tl.int64))
    tl.store(out_i_ptr + slot * 4 + 3, tl.sum(counts2, axis=0).to(tl.int64)
             + tl.sum(lane_band, axis=0) + count + tl.sum((lane_packed & 15).to(tl.int64), axis=0)
             + tl.sum(((word1 ^ word2 ^ word3 ^ word4 ^ word5 ^ word6 ^ word7) & 15).to(tl.int64),
                      axis=0))


def _key_value(key: torch.Tensor) -> torch.Tensor:
    """The float32 whose order key is ``key`` (int32)."""
    bits = torch.where(key >= 0, key, key ^ 0x7FFFFFFF)
    return bits.view(torch.float32)


def band_starts(x: torch.Tensor, p: float, key_shift: int, values: int, rank: int):
    """Per row: the band's first value index (key >> key_shift; ``values`` values from
    values // 2 below the top-p boundary), the band as floats [first, after) (by values, or
    ``rank`` > 0 entries by rank around the boundary) and the row's max."""
    xf = x.float()
    row_max = xf.max(dim=1).values
    vals, _ = torch.sort(xf, dim=1, descending=True)
    probs = torch.softmax(vals, dim=1)
    cum = torch.cumsum(probs, dim=1)
    t_idx = torch.searchsorted(cum, torch.full((x.shape[0], 1), p, device=x.device)).clamp(
        max=x.shape[1] - 1)
    t = torch.gather(vals, 1, t_idx).squeeze(1).contiguous()
    bits = t.view(torch.int32)
    key = bits ^ ((bits >> 31) & 0x7FFFFFFF)
    first_value = ((key >> key_shift) - values // 2).to(torch.int32)
    band = torch.stack([_key_value((first_value << key_shift).to(torch.int32)),
                        _key_value(((first_value + values) << key_shift).to(torch.int32))], 1)
    if rank > 0:
        top = (t_idx.squeeze(1) - rank // 2).clamp(min=0)
        bottom = (t_idx.squeeze(1) + rank // 2).clamp(max=x.shape[1] - 1)
        band = torch.stack([vals.gather(1, bottom[:, None]).squeeze(1),
                            torch.nextafter(vals.gather(1, top[:, None]).squeeze(1),
                                            torch.tensor(float("inf"), device=x.device))], 1)
    return first_value, band.contiguous(), row_max.contiguous()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=131072)
    ap.add_argument("--steps", default="read,count,mass,histonly,hist,histdummy")
    ap.add_argument("--configs", default="1024x1,256x1,1024x4,512x2",
                    help="TILExWARPS,...")
    ap.add_argument("--device", default="cuda", help="cpu: a smoke run under TRITON_INTERPRET=1")
    ap.add_argument("--band-values", type=int, default=64)
    ap.add_argument("--band-rank", type=int, default=0)
    ap.add_argument("--workload", default="zipf", choices=["zipf", "gaussian"])
    args = ap.parse_args()
    dtype = getattr(torch, args.dtype)
    key_shift = {torch.bfloat16: 16, torch.float16: 13}.get(dtype, 0)
    B, V = args.batch, args.vocab
    seg_len = min(8192, triton.next_power_of_2(V))
    nseg = -(-V // seg_len)
    rng = np.random.default_rng(5)
    rows = (generators.zipf_logits(B, V, 1.1, rng) if args.workload == "zipf"
            else rng.normal(0.0, 2.0, size=(B, V)).astype(np.float32))
    x = torch.from_numpy(rows).to(args.device, dtype)
    first, band, row_max = band_starts(x, 0.9, key_shift, args.band_values, args.band_rank)
    cap_seg = 256
    slot_val = torch.zeros(B * nseg * cap_seg, dtype=torch.float32, device=args.device)
    slot_idx = torch.zeros(B * nseg * cap_seg, dtype=torch.int32, device=args.device)
    out_i = torch.zeros(B * nseg * 4, dtype=torch.int64, device=args.device)
    out_f = torch.zeros(B * nseg, dtype=torch.float32, device=args.device)
    nbytes = x.numel() * x.element_size()
    gpu = args.device != "cpu"
    print(f"{torch.cuda.get_device_name() if gpu else 'cpu'} torch {torch.__version__} triton {triton.__version__}"
          f" {args.dtype} B={B} V={V} ({nbytes / 2**20:.0f} MiB)")
    for cfg in args.configs.split(","):
        block, warps = (int(v) for v in cfg.split("x"))
        for step in args.steps.split(","):
            def run(step=step, block=block, warps=warps):
                probe_kernel[(B, nseg)](x, first, row_max, band, V, seg_len, out_i, out_f,
                                        slot_val, slot_idx, BLOCK=block, STEP=STEPS[step],
                                        KEY_SHIFT=key_shift, CAP_SEG=cap_seg,
                                        WORDS=-(-args.band_values // 8), num_warps=warps)
            run()
            if not gpu:
                print(f"{cfg:>8} {step:>10} ran: {out_i.view(B * nseg, 4).sum(0).tolist()}")
                continue
            torch.cuda.synchronize()
            us = triton.testing.do_bench(run, warmup=10, rep=50, return_mode="median") * 1e3
            inside = int(out_i.view(B * nseg, 4)[:, 2].sum()) if step in ("hist",
                                                                          "histonly") else -1
            print(f"{cfg:>8} {step:>10} {us:8.1f} us {nbytes / us / 1e3:7.0f} GB/s"
                  + (f"  band entries/row {inside / B:.0f}" if inside >= 0 else ""), flush=True)


if __name__ == "__main__":
    main()
