"""Launch wrappers: segment layout, block sizes, scratch buffers and the three launches."""

from __future__ import annotations

import functools
import math
import os
import struct
from dataclasses import dataclass, fields, replace
from typing import NamedTuple

import torch
import triton

from qrita.backends.triton import arena, eager_graph, fastlaunch, philox
from qrita.backends.triton.fused_sample import fused_topk_sample_kernel, selection_sample_kernel
from qrita.backends.triton.fused_select import threshold_select_kernel
from qrita.backends.triton.fused_topp import fused_topp_sample_kernel
from qrita.backends.triton.hist_band import hist_band_count_kernel, hist_band_merge_kernel
from qrita.backends.triton.one_launch import (
    COUNTER_WORDS,
    SORT_MAX,
    one_launch_select_kernel,
    one_launch_topk_mask_kernel,
    sort_selection_kernel,
)
from qrita.backends.triton.pipeline import (
    candidates_kernel,
    cutoff_kernel,
    threshold_kernel,
    write_mask_kernel,
    write_select_kernel,
)
from qrita.backends.triton.primitives import FIXED_MAX_VOCAB
from qrita.backends.triton.reject_split import (
    reject_split_check_kernel,
    reject_split_stats_kernel,
)
from qrita.backends.triton.reject_topp import reject_topp_sample_kernel
from qrita.backends.triton.wide import (
    KEY_PART,
    wide_band_kernel,
    wide_compact_kernel,
    wide_narrow_kernel,
    wide_round_kernel,
    wide_search_kernel,
)

__all__ = ["PipelineConfig", "pipeline_config", "launch_mask", "launch_select", "launch_select_one",
           "launch_fused_sample", "launch_fused_topp_sample", "launch_reject_topp_sample",
           "one_launch", "chunk_rows", "interpreting"]

ROW_INFO = 16  # per row: mode, boundary key, tie budget, candidates, pivot rounds, wide interval
HIST_SMALL_BINS = 512  # the count histogram's bins at ``histsmall`` batches (``histband``'s)
WIDE_BLOCK = 128  # tile of the wide rounds: 16 per-lane pivot counters and masses per entry
#: top-k + top-p: the per-row search in two launches (``threshold_kernel`` STAGE 1: the dense
#: search only, 112 registers; STAGE 2: the pending rows' other paths), one launch otherwise
#: (STAGE 0). H200, B = 1024, fp32 zipf: topk100_topp0.9's search 120.0 -> 97.1 us; top-k alone
#: gains nothing from it (topk50 51.6 -> 54.2, k1000 133.7 -> 141.9: the second launch's
#: programs only exit) (BENCHMARKS.md twelfth section). Measuring knob, read once at import:
#: QRITA_THRESHOLD_SPLIT=0 runs top-k + top-p in one launch too, =all splits every call
_SPLIT = os.environ.get("QRITA_THRESHOLD_SPLIT", "1")


def threshold_stages(has_k: bool, has_p: bool) -> tuple[int, ...]:
    """The STAGE of each launch of ``threshold_kernel`` for a call's kind."""
    if _SPLIT == "all" or (_SPLIT != "0" and has_k and has_p):
        return (1, 2)
    return (0,)


def launch(kernel, grid: tuple[int, ...], *args, **kwargs) -> None:
    """``kernel[grid](*args, **kwargs)`` through :func:`qrita.backends.triton.fastlaunch.launch`
    (cached compiled kernels, ~2x less host time per launch on the H200); ``QRITA_FAST_LAUNCH=0``
    (read when a kernel is first launched) launches through Triton's own binder."""
    fastlaunch.launch(kernel, grid, *args, **kwargs)


def launch_site(site, kernel, grid: tuple[int, ...], *args, **kwargs) -> None:
    """:func:`launch` for a call whose specialization ``site`` (hashable) determines: see
    :func:`qrita.backends.triton.fastlaunch.launch_site` (no per-argument key after the first
    call per site)."""
    fastlaunch.launch_site(site, kernel, grid, *args, **kwargs)


#: the tokens fastlaunch keys runtime arguments on, for the call sites below
_SPEC, _TYPE = fastlaunch._spec_token, fastlaunch._type_token
_SITES: dict[tuple, int] = {}


def _site_id(site: tuple) -> int:
    """A small int for a call's specialization tuple (hashed once per call, not per launch)."""
    found = _SITES.get(site)
    if found is None:
        found = _SITES[site] = len(_SITES)
    return found


def _table_override(name: str, default: tuple[int, int]) -> tuple[int, int]:
    """Developer knob for measuring and bisecting on a GPU: ``QRITA_LAUNCH_TABLE="cand=512x2,
    wide=256x2,search=1024x4,band=2048x0"`` replaces the (tile, warps) of the candidate pass /
    wide compaction / mask write pass (``write``), the (dense candidates, warps) of the per-row
    search kernels (``search``, ``searchsmall``), the warps of top_k's per-row sort (``sort=0xW``,
    ``sortbig=0xW``, ``sortsmall=RxW``) or of the σ-cutoff kernel (``cutoff=0xW``), the (tile,
    warps) of the wide top-p stage's 16-way rounds (``round``) or of its compaction after them
    (``wide2``), pass A's masses by the online softmax instead of relative to a fixed reference
    (``lean=0x0``), the band's size cap in percent of the slots (``bandpct=75x0``), the
    programs per segment of the 16-way rounds (``roundsplit=4x0``; default 2; at batches
    whose missed rows are listed, with fixed-point masses, ``roundlisted=4x0``; default 0: as
    ``roundsplit``), the size of the
    wide top-p band's sample and the warps placing it (``band=4096x8``), or pass A's (tile,
    warps) for top-k alone at batches of at most ``SMALL_BATCH_ROWS`` rows (``candsmall``;
    default 2048x8, ``0x0``: off;
    ``candsmallkp=0x0``: not for top-k + top-p with a scalar k; ``sparsesmall=8x0``: up to 8
    candidates of a tile one by one, as elsewhere (default 0: prefix sums only); the tile may
    exceed ``block``, up to the segment; ``searchb=0xW`` / ``cutoffb=0xW``: the per-row
    search's dense stage and the cutoff kernel at those batches, top-k alone (default 0x8 /
    0x0; ``searchb=0x0``: the usual warps)), the same tile for those calls at SMALL_BATCH_ROWS <
    B <= N (``candmid=TxW``, ``midrows=Nx0``; default 256x1, N 128; ``candmid=0x0``: off),
    pass A's one-by-one append limit (``sparse=Nx0``;
    ``sparselarge=Nx0`` for calls with the top-k retry), the one-launch kernels' pass A tile and
    append limit (``candone=TILEx0``, default 2048, up to the segment; ``sparseone=Nx0``,
    default 0: prefix sums only), the small-k search's slots per row (``capsmall=2048x0``;
    ``0x0``: the usual), the wide compaction's FLAT lanes (``wideflat=1x0`` / ``0x0``;
    default on for float32), the keyed band of 16-bit rows (``keyband=0x0``: off) and
    its bands of at most N values counted without a histogram (``keynarrow=Nx0``, N <= 8;
    default 8 for bfloat16, 0 off), the wide
    stage's programs per segment after the band (``widelist=Gx0``; ``0x0``: one per row), its
    rounds merged by their last program at batches it does not list (``roundmerge=1x0``,
    default; ``0x0``: narrow launches; also in the interpreter), their partials added into
    per-row totals by integer atomics with fixed-point masses (``roundatomic=1x0``, default;
    ``0x0``: per-part slots; also in the interpreter), or the
    tiles in flight per program in pass A and the wide stage (``ahead=AxW``, ``aheadsmall=AxW``
    at batches of at most ``SMALL_BATCH_ROWS``; also in the interpreter), or pass A's S tiles
    a turn in their own load slots (``slots=SxR``, S 2 or 4: top-p calls only up to R rows,
    R = 0 every batch; default 2x0, ``0x0`` the ring; also in the interpreter) and their
    register limit (``slotsregs=Rx0``, NVIDIA; default 64, ``0x0`` none), or the wide band
    compaction's and search's register limits (``compactregs=Rx0``, ``wsearchregs=Rx0``,
    NVIDIA; default 80 for float32's compaction, none for 16-bit rows', 80 for the search;
    ``0x0``: none), or the wide
    compaction's append positions by one scan per tile (``widepacked=1x0``, default; ``0x0``
    off), or its interval tests by float compares (``widelean=1x0``, default), or the 16-way
    rounds' accumulators with the pivots as rows (``roundrows=1x0``; off), or the mask write's
    segments whose copies of T are all kept or none written without ranking them
    (``writecut=1x0``, default), or the band kernel's register limit (``bandregs=Rx0``,
    NVIDIA; default 128, ``0x0`` none), or the wide compaction's loop without NaN terms where
    no NaN key is reached (``wideunswitch=1x0``, default) and its band weights by exp2
    (``wideexp2=1x0``; off, float masses only), or the wide stage's masses in fixed point
    (``widefixed=1x0``, default) and, with them, the band from the one-launch count histogram
    at batches of at most B rows (``histsmall=Bx0``; default 64), or ``top_k``'s search
    writing the selection itself, sorted when asked, one launch after pass A instead of three
    (``selfuse=1xR``, from R rows; default 16-bit rows from 256, ``selfuse=0x0`` off), or
    top-k's slots per row for large k (``capk=Sx0``; default 8192, ``0x0`` off), or the
    selection write's tile (``selblock=Nx0``; off: the streaming tile)."""
    for item in os.environ.get("QRITA_LAUNCH_TABLE", "").split(","):
        key, _, value = item.partition("=")
        if key.strip() == name and "x" in value:
            tile, warps = value.split("x")
            return int(tile), int(warps)
    return default


@functools.cache
def interpreting() -> bool:
    """True when Triton runs kernels on the CPU (TRITON_INTERPRET=1). Read once per process, as
    ``triton.jit`` reads it once, when it decorates a kernel."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def next_pow2(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


@dataclass(frozen=True)
class PipelineConfig:
    """Launch parameters. They depend on V and dtype only (never on B, so a row's answer does not
    depend on its batch) and change speed, never the answer. (The ``*_small`` and ``*_mid`` pass
    A fields and the ``*_small_batch`` warps apply by batch size: pass A to rows with top-k on,
    which sum no floats there; the warps to top-k alone.)"""

    block: int  # streaming tile of the segment passes
    seg_len: int  # entries per segment (a multiple of block)
    nseg: int  # segments per row
    nseg_p2: int  # nseg rounded up to a power of two
    cap_seg: int  # candidate slots per segment; nseg_p2 * cap_seg = candidates in registers
    sample: int  # first-tile sample of the σ-cutoff
    warps_stream: int
    warps_search: int
    dense: int = 1024  # candidates searched densely packed when a row has at most this many
    block_cand: int = 0  # tile of the candidate pass (0: ``block``)
    warps_cand: int = 0  # warps of the candidate pass (0: ``warps_stream``)
    block_cand_one: int = 0  # candidate tile of the one-launch kernels (0: ``block_cand``)
    sparse_one: int = -1  # ``sparse`` of the one-launch kernels' pass A (-1: ``sparse``)
    sparse: int = 8  # a tile with at most this many candidates appends them one by one
    # ``sparse`` of pass A for calls with a large or per-row k (those with the top-k retry;
    # -1: ``sparse``): such rows keep ~1000+ candidates, ~2 per 128-entry tile
    sparse_large: int = -1
    oversample: float = 4.0
    band_sample: int = 4096  # sample placing the wide top-p band (entries)
    warps_band: int = 4  # warps of the band's placement
    # the band kernel's register limit per thread (NVIDIA's ``maxnreg``; 0: the compiler's
    # choice; ``bandregs``)
    regs_band: int = 0
    # at most this many registers per thread in pass A with load slots (``slotsregs``; 0: no
    # limit; NVIDIA only)
    regs_slots: int = 0
    # at most this many registers per thread in the wide band's compaction (``compactregs``;
    # 0: no limit; NVIDIA only)
    regs_compact: int = 0
    # the same for the wide band's search (``wide_search_kernel``, BAND; ``wsearchregs``)
    regs_wide_search: int = 0
    block_wide: int = 0  # tile of the wide stage's compaction (0: ``block_cand``)
    warps_wide: int = 0  # its warps (0: ``warps_cand``)
    sparse_wide: int = -1  # ``sparse`` of the wide compaction (-1: ``sparse``; 0: prefix sums only)
    retry_min_k: int = 256  # a scalar k from this on (or per-row k) runs the top-k retry
    # top-k alone with a scalar k whose rows are expected to keep at most ``dense_small``
    # candidates: the per-row search packs them into that many lanes with ``warps_small`` warps
    # (0: off)
    dense_small: int = 0
    warps_small: int = 4
    block_write: int = 0  # tile of the mask's write pass (0: ``block``)
    warps_write: int = 0  # its warps (0: ``warps_stream``)
    # tile of the selection's write (``write_select_kernel``; 0: ``block``): only its k == V
    # copy loops over tiles, but the tile sets the kernel's registers (``selblock``)
    block_select: int = 0
    warps_cutoff: int = 0  # warps of the σ-cutoff kernel (0: ``warps_stream``)
    block_round: int = WIDE_BLOCK  # tile of the wide stage's 16-way rounds
    block_wide2: int = 128  # tile of the wide compaction after the rounds
    warps_wide2: int = 1  # its warps
    lean_mass: bool = True  # pass A's masses relative to a fixed reference (else online)
    # pass A of a call without top-p takes a segment's largest key over its candidates only
    # (``candtop``; ``pipeline.candidates_kernel``'s CAND_TOP)
    cand_top: bool = False
    # pass A takes this many tiles a turn (2 or 4; 0: the ring of ``ahead``), each in its own
    # load slot (``slots``; ``pipeline.candidates_kernel``'s SLOTS), where a segment is a
    # multiple of that many tiles; calls with top-p only at batches of at most
    # ``slots_topp_rows`` rows
    tile_slots: int = 0
    slots_topp_rows: int = 0
    wide_paired: bool = False  # the wide compaction's loop likewise (``widepaired``)
    # the wide band placed from a count histogram of the whole row (``hist_band``) in this
    # many bins (0: from a sample, ``wide.wide_band_kernel``), holding at most
    # ``hist_band_percent`` percent of ``max_band`` entries
    hist_bins: int = 0
    hist_band_percent: int = 50
    hist_block: int = 8192  # the histogram's tile (entries per ``tl.histogram`` call) and warps
    warps_hist: int = 8
    # the band placed by the row's last counting program (one launch, counters kept zeroed
    # between calls) instead of a fill, the counting launch and a merge launch
    hist_one_launch: bool = False
    # programs per segment of the count histogram's launch (``histsplit``; integer counts, so
    # no answer depends on it), at the batches the histogram places the band
    hist_split: int = 1
    # the wide compaction's lanes as the compiler cannot prove contiguous (``wide_compact_kernel``
    # FLAT: no layout conversion through shared memory per appending tile)
    wide_flat: bool = False
    # 16-bit logits: the wide band counted per value (``wide.keyed_band``) when it spans at most
    # ``wide.KEY_BINS`` values: the low bits its float32 keys share (16 for bfloat16, 13 for
    # float16; 0: off, always for float32)
    key_shift: int = 0
    # a keyed band of at most this many values (<= 8) is widened to that many only and counted
    # in 4-bit fields per lane instead of a histogram (``keynarrow``; bfloat16 8, else 0: off)
    key_narrow: int = 0
    band_percent: int = 75  # the wide top-p band's size cap, in percent of the slots
    round_split: int = 2  # programs per segment in the wide stage's 16-way rounds
    wide_rounds: int = 4  # the 16-way rounds' launches (rows the band missed)
    # programs (per segment) of the launches after the band, which take the rows it missed from
    # a list; 0: one program per row of the batch (``widelist``)
    wide_list: int = 0
    # the rounds' merge and narrowing by each row's last program to arrive (``roundmerge``),
    # instead of launches of their own, at batches whose rows are not listed (``wide_list``)
    round_merge: bool = False
    # the rounds' partials added into per-row totals by integer atomics (``roundatomic``; with
    # fixed-point masses only), not stored per segment and part: no scratch per part
    round_atomic: bool = False
    # tiles in flight per program: (pass A, the wide stage's compaction and rounds), at any
    # batch and at batches of at most SMALL_BATCH_ROWS (``ahead``, ``aheadsmall``)
    ahead: tuple[int, int] = (1, 1)
    ahead_small: tuple[int, int] = (1, 1)
    # the wide compaction's append positions by one 32-lane scan per tile (``widepacked``)
    wide_packed: bool = False
    # the wide compaction's interval tests as float compares, no order key per entry
    # (``widelean``)
    wide_lean: bool = False
    # the 16-way rounds' per-lane accumulators as (16 pivots, tile) (``roundrows``)
    round_pivot_rows: bool = False
    # the wide compaction's loop without the NaN terms for rows whose interval and band reach
    # no NaN key (``wideunswitch``), and its band masses' weights by exp2 (``wideexp2``)
    wide_unswitch: bool = False
    wide_exp2: bool = False
    # the wide stage's masses as int64 fixed-point sums, exact in any order (``widefixed``)
    wide_fixed: bool = False
    # with them, batches of at most this many rows place the band from the one-launch count
    # histogram (``histsmall``; 0: never)
    hist_small_batch: int = 0
    # at those batches, the band compaction's (tile, warps) and the rounds' programs per
    # segment (``widesmall``, ``roundsmall``; 0: as at any batch)
    block_wide_small: int = 0
    warps_wide_small: int = 0
    round_split_small: int = 0
    # the rounds' programs per segment at batches whose missed rows are listed (``wide_list``),
    # with fixed-point masses (order-free sums, so the split may follow B): ``roundlisted``;
    # 0: ``round_split``
    round_split_listed: int = 0
    # the batches those two apply at: at most this many rows (``smallrows``; 0: every batch of
    # at most ``hist_small_batch`` rows)
    wide_small_batch: int = 0
    # the mask write of wide rows: a segment whose copies of T are all kept, or none, keeps
    # the entries at or above one key, with no ranks and no count per tile (``writecut``)
    write_cut: bool = False
    # a row stops narrowing once its interval holds at most this many entries (-1: never; the
    # launch table sets half the slots)
    wide_fit: int = -1
    warps_round: int = 0  # their warps (0: ``warps_stream``)
    # top-k alone (no top-p: pass A sums no floats, so its tile and warps cannot change the
    # answer) at batches of at most SMALL_BATCH_ROWS rows: pass A's (tile, warps), where the
    # default one-warp programs leave the GPU latency-bound (0: the usual ones)
    block_cand_small: int = 0
    warps_cand_small: int = 0
    # ``sparse`` of that pass A (-1: ``sparse``; 0: prefix sums only)
    sparse_small: int = -1
    # at those small batches, top-k alone: the warps of the per-row search's dense stage and of
    # the cutoff kernel (0: as at any batch), one program per row there, latency-bound
    warps_search_small_batch: int = 0
    warps_cutoff_small_batch: int = 0
    # top-k alone with a scalar k that takes the small-k search (``small_k_search``): candidate
    # slots per row (0: ``cap``, the usual). Fewer slots: a smaller scratch and fewer slots for
    # the per-row search to hold. A segment that overflows sends its row to the exact fallback,
    # as at any capacity, so only speed and memory depend on it
    cap_small: int = 0
    # ``candsmall`` also for top-k + top-p with a scalar k in (0, V) (every row has top-k on, so
    # pass A sums no masses there either; only +inf counts): on for the GPU (measured)
    cand_small_kp: bool = False
    # top-k alone (and, with ``cand_small_kp``, top-k + top-p with a scalar k: no float sums in
    # pass A) at batches above SMALL_BATCH_ROWS and of at most ``cand_mid_rows`` rows: pass A's
    # (tile, warps) (``candmid``; 0: the usual ones). There one-warp programs of 128-entry
    # tiles hold too few loads in flight (latency-bound), and only speed depends on the tile
    block_cand_mid: int = 0
    warps_cand_mid: int = 0
    cand_mid_rows: int = 0
    # ``top_k`` with a scalar k below the retry's: the per-row search writes the selection
    # itself, sorted when asked (``fused_select.threshold_select_kernel``): one launch instead
    # of the search, ``write_select_kernel`` and the sort (``selfuse=1xR``), at batches of at
    # least ``fused_select_rows`` rows (R)
    fused_select: bool = False
    fused_select_rows: int = 0
    # top-k alone with a scalar k whose expected candidates overflow ``cap`` (large k): up to
    # this many slots per row instead (0: off), so its rows keep the candidate path instead of
    # all taking the full-row fallback (``large_k_config``); only scratch size and speed
    # depend on it (``capk=Sx0``)
    cap_large: int = 0

    def __post_init__(self):
        # hashed once: the per-call caches (_plan, small_k_search, ...) key on the config, and
        # a dataclass's generated hash rebuilds the tuple of every field on each lookup (~2 us)
        object.__setattr__(self, "_hash", hash(tuple(getattr(self, f.name)
                                                     for f in fields(self))))

    def __hash__(self) -> int:
        return self._hash

    @property
    def cap(self) -> int:
        return self.nseg_p2 * self.cap_seg

    @property
    def max_band(self) -> float:
        """Entries the wide top-p band aims below: ``band_percent`` of the real slots."""
        return self.band_percent / 100.0 * self.nseg * self.cap_seg

    @property
    def max_cands(self) -> float:
        """Candidates the σ-cutoff aims below: half the real slots, so segments rarely overflow."""
        return 0.5 * self.nseg * self.cap_seg


def pipeline_config(vocab: int, dtype: torch.dtype) -> PipelineConfig:
    """The launch table (measured on the H200, BENCHMARKS.md), cached per (V, dtype, mode)."""
    return _pipeline_config(vocab, dtype, interpreting(), os.environ.get("QRITA_LAUNCH_TABLE", ""))


@functools.lru_cache(maxsize=256)
def _pipeline_config(vocab: int, dtype: torch.dtype, interpret: bool, table: str) -> PipelineConfig:
    warps_search = 8
    if interpret:
        block, seg_min, max_segs, cap, sample, dense = 128, 256, 64, 256, 128, 64
        block_cand, warps_cand, sparse = 128, 4, 4
        block_cand_one = block_cand
        block_wide, warps_wide, sparse_wide = 128, 2, -1
        dense_small, warps_small = 32, 2  # so CI runs the small-k search (V <= 128, k <= 16)
        block_write, warps_write = 0, 0
        warps_cutoff = 0
        block_round, warps_round = WIDE_BLOCK, 0
        block_wide2, warps_wide2 = block_wide, warps_wide
        lean_mass = True  # as on the GPU
        hist_bins, hist_band_percent = 0, 50
        hist_block, warps_hist = 128, 4
        hist_one_launch = False
        wide_flat = False
        band_percent = 75
        round_split = 1
        block_wide_small, warps_wide_small = _table_override("widesmall", (64, 4))
        round_split_small = _table_override("roundsmall", (0, 0))[0]
        round_split_listed = _table_override("roundlisted", (0, 0))[0]
        wide_small_batch = _table_override("smallrows", (1, 0))[0]
        wide_rounds, wide_fit_percent = 4, 50  # as on the GPU
        wide_list = 2  # fewer programs than missed rows: CI runs their loop over the list
        round_merge = _table_override("roundmerge", (1, 0))[0] == 1  # as on the GPU
        round_atomic = _table_override("roundatomic", (1, 0))[0] == 1  # as on the GPU
        ahead = _table_override("ahead", (1, 1))  # as on the GPU
        ahead_small = _table_override("aheadsmall", ahead)
        wide_packed = _table_override("widepacked", (1, 0))[0] == 1  # as on the GPU
        wide_lean = _table_override("widelean", (1, 0))[0] == 1  # as on the GPU
        wide_unswitch = _table_override("wideunswitch", (1, 0))[0] == 1  # as on the GPU
        wide_exp2 = _table_override("wideexp2", (0, 0))[0] == 1  # as on the GPU
        wide_fixed = _table_override("widefixed", (1, 0))[0] == 1  # as on the GPU
        cand_top = _table_override("candtop", (1, 0))[0] == 1  # as on the GPU
        tile_slots, slots_topp_rows = _table_override("slots", (2, 0))  # as on the GPU
        # so CI runs it (on the GPU: float32 only)
        wide_paired = _table_override("widepaired", (1, 0))[0] == 1
        # as on the GPU, at the batches CI runs: the count histogram's band at B <= 2, the
        # sample's above; another compaction tile and warps at B = 1
        hist_small_batch = _table_override("histsmall", (2, 0))[0]
        hist_split = _table_override("histsplit", (1, 0))[0]  # as on the GPU
        round_pivot_rows = _table_override("roundrows", (0, 0))[0] == 1  # as on the GPU
        write_cut = _table_override("writecut", (1, 0))[0] == 1  # as on the GPU
        block_cand_small, warps_cand_small = 0, 0
        sparse_small = sparse_large = sparse_one = -1
        warps_search_small_batch = warps_cutoff_small_batch = 0
        cap_small = 128  # half the slots: CI runs the small-k search's own capacity
        cand_small_kp = False
        block_cand_mid, warps_cand_mid = _table_override("candmid", (0, 0))
        cand_mid_rows = _table_override("midrows", (256, 0))[0]
        # off: the interpreter's few slots send rows to the full-row fallback, which CI runs
        # (``test_large_k_capacity_keeps_the_candidate_path`` sets ``capk``)
        cap_large = _table_override("capk", (0, 0))[0]
    else:
        block = 2048 if dtype == torch.float32 else 4096
        seg_min, max_segs, cap, sample, dense = 8192, 64, 4096, 2048, 1024
        # candidate pass and wide compaction: measured on the H200 (BENCHMARKS.md,
        # benchmarks/tune_launch.py --stage cand / wide)
        # one warp per program: the per-tile count and append reduce by warp shuffles alone,
        # no shared memory or barrier (tune_launch.py --stage cand_warps, BENCHMARKS.md eighth
        # section: B=1024 topk50 246 -> 164 us, topk1000 470 -> 214, topp0.9 365 -> 255, fp32)
        block_cand, warps_cand, sparse = 128, 1, 8
        # the one-launch kernels (every step at warps_search warps): pass A in 2048-entry
        # tiles, candidates appended by prefix sums only (``candone=TILEx0`` / ``sparseone=Nx0``;
        # was 512 and the usual 8). H200, V = 131072 fp32 zipf, B = 1, kernel us: topk50 mask
        # 35.3 -> 29.4, top_k k50 35.2 -> 28.9, topk1000 48.3 -> 37.8 (BENCHMARKS.md
        # twenty-third session)
        block_cand_one = _table_override("candone", (2048, 0))[0]
        sparse_one = _table_override("sparseone", (0, 0))[0]
        # (tune_launch.py --stage wide_warps, BENCHMARKS.md eighth section: fp32 topp0.9 B=1024
        # 698 -> 551 us at 128 x 1; bf16 256 x 1 720, 128 x 1 697, topp0.99 932 vs 977).
        # bfloat16 rows since the forty-sixth session: 1024 x 1, for the keyed count (its tile's
        # value histogram is merged once per tile: fewer merges per entry). bf16 graph us,
        # 256 x 1 -> 1024 x 1 (2048 x 1), H200, V = 131072 (s46e; wide_compact in brackets):
        # zipf topp0.9 B = 64 139.4 -> 137.4 (152.9), B = 256 264.0 -> 255.6 (298.7),
        # B = 1024 863.8 -> 832.5 (1003.8; 413.1 -> 382.7), gaussian topp0.99 B = 256
        # 280.6 -> 272.0, B = 1024 917.6 -> 886.7; H100 (s46d) zipf topp0.9 B = 1024
        # 909.1 -> 878.0 (512 x 1 929.1, 512 x 2 914.4, 1024 x 4 967.1, 128 x 1 923.7).
        # float16 keeps 256 x 1: its Gaussian rows span too many values for the keyed count,
        # and their plain compaction is slower in big tiles. H100 fp16 topp0.9 graph us,
        # 256 x 1 -> 1024 x 1 (s46g): gaussian B = 256 507.9 -> 672.4, B = 1024 1392.7 ->
        # 1980.6 (wide_compact 486.4 -> 1075.1); zipf B = 256 282.1 -> 273.6, B = 1024
        # 939.0 -> 908.5
        block_wide, warps_wide = {torch.float32: (128, 1),
                                  torch.bfloat16: (1024, 1)}.get(dtype, (256, 1))
        # the band's tiles hold ~6 candidates each: one prefix sum beats the one-by-one append
        # (tune_launch.py --stage wide_sparse, BENCHMARKS.md fifth section: 0 fastest everywhere)
        sparse_wide = 0
        block_cand, warps_cand = _table_override("cand", (block_cand, warps_cand))
        # ``sparse=Nx0`` / ``sparselarge=Nx0``: pass A's one-by-one append limit, for every call
        # / for calls with the top-k retry (k >= retry_min_k or per-row k). Not measured since
        # pass A went to one warp per program (eighth session): off (-1: ``sparse``)
        sparse = _table_override("sparse", (sparse, 0))[0]
        sparse_large = _table_override("sparselarge", (-1, 0))[0]
        block_wide, warps_wide = _table_override("wide", (block_wide, warps_wide))
        dense, warps_search = _table_override("search", (dense, warps_search))
        # H200, B = 1024, V = 131072, fp32 zipf, threshold kernel: topk50 92 -> 79 us, top_k
        # k50 93 -> 79 at 512 x 4 (k1000 at 512 x 4: 168 -> 205, so only for small k;
        # BENCHMARKS.md tenth section)
        dense_small, warps_small = _table_override("searchsmall", (512, 4))
        # the mask's write pass in 1024-entry tiles, 4 warps (was the streaming tile: 2048 fp32,
        # 4096 16-bit). H200, B = 1024, zipf topp0.9, kernel us: bf16 563.9 -> 221.3 (2048 x 4:
        # 247.8), fp32 310.1 -> 269.7; topk50 fp32 143.5 -> 142.5 (BENCHMARKS.md nineteenth
        # session; the wide rows' per-tile tie count is what a big tile makes slow)
        block_write, warps_write = _table_override("write", (1024, 4))
        warps_cutoff = _table_override("cutoff", (0, 0))[1]
        block_round, warps_round = _table_override("round", (WIDE_BLOCK, 0))
        # H200, fp32 zipf topp0.9, B = 1024: wide_compact 467.8 -> 459.4 us at 256 x 4 (128 x 4
        # 466.2, 512 x 8 464.1; BENCHMARKS.md thirteenth session)
        block_wide2, warps_wide2 = _table_override("wide2", (256, 4))
        # pass A's masses relative to a fixed reference (``lean=0x0``: the online softmax):
        # H200, B = 1024, fp32 topp0.9: pass A 253.9 -> 172.7 us, masks topk100_topp0.9
        # 551 -> 454 us, topp0.9 1639 -> 1559 (BENCHMARKS.md nineteenth session)
        lean_mass = _table_override("lean", (1, 0))[0] == 1
        # ``candtop``: pass A without top-p takes a segment's largest key over its candidates,
        # in the tiles holding some (``candidates_kernel``'s CAND_TOP), instead of over every
        # entry: the tiles without one (almost all at k = 50) lose 14 of about 50 instructions
        # per 128 entries (sm90 SASS, bf16, triton 3.9). H100, graph us, default -> candtop
        # (s43f): bf16 k50 B = 1024 226.6 -> 222.6 (pass A 153.4 -> 148.8), bf16 k1000 465.3
        # -> 458.3, fp32 k1000 522.3 -> 520.5, bf16 k50 B = 256 74.7 -> 73.5; the rest level
        # (BENCHMARKS.md forty-fourth session). ``candtop=0x0`` turns it off
        cand_top = _table_override("candtop", (1, 0))[0] == 1
        # ``slots=SxR``: pass A takes S tiles a turn (2 or 4), each in its own load slot,
        # refilled as soon as its tile is taken; calls with top-p only at B <= R (``0x0``: the
        # ring). The ring (``ahead``) turns its registers at the loop's end, and in sm90 SASS
        # (triton 3.9) that move waits on the load the turn just issued: one load in flight
        # per program whatever AHEAD, which would explain why neither ``ahead=2x1`` nor
        # 256-entry tiles helped (s43d).
        # H100, zipf, pass A us (graph us), ring -> two slots (s44a, BENCHMARKS.md forty-fourth
        # session): B = 1024 fp32 k50 194.0 -> 187.9 (272.8 -> 265.9), k1000 257.2 -> 245.2
        # (515.4 -> 501.6), bf16 k50 148.4 -> 139.9 (222.1 -> 210.7), k1000 251.5 -> 235.6
        # (458.1 -> 440.5), topk50 154.1 -> 143.3; topp0.9 B = 64 fp32 37.6 -> 27.3 (177.0 ->
        # 166.9), bf16 19.3 -> 15.5; but topp0.9 B = 256 slower (fp32 56.9 -> 64.6, 390.1 ->
        # 397.3; bf16 44.5 -> 51.1), B = 1024 level (189.8 -> 185.5). That was the registers
        # (72 a thread: 28 programs an SM, not 32); at 64 (``slotsregs``, below) top-p wins at
        # every batch too (s45a, topp0.9 pass A, graph us, ``slots=2x128`` -> ``2x0`` at 64
        # registers: B = 256 fp32 57.0 -> 54.3 (392.2 -> 387.8), bf16 44.9 -> 41.0 (280.8 ->
        # 275.9); B = 1024 fp32 190.1 -> 181.6 (1214.7 -> 1208.1), bf16 152.4 -> 140.4 (921.8
        # -> 909.0); B = 64 level). Four slots at 64 registers (``slots=4x128``) lost: fp32
        # k50 B = 64 pass A 18.1 -> 24.8, k1000 34.2 -> 48.5, B = 1024 187.1 -> 193.4; bf16
        # level at B = 1024 (BENCHMARKS.md forty-fifth session)
        tile_slots, slots_topp_rows = _table_override("slots", (2, 0))
        # ``widepaired=1x0``: the wide compaction's loop takes two tiles a turn in their own
        # load slots, as pass A's (``slots``). H100, zipf topp0.9, wide_compact us (graph us),
        # off -> on (s45a): fp32 B = 64 28.5 -> 25.2 (167.0 -> 163.0), B = 256 93.3 -> 90.3
        # (392.2 -> 387.5), B = 1024 294.2 -> 295.0 (1214.7 -> 1217.2); bf16 (the keyed count)
        # slower: B = 256 109.6 -> 114.9, B = 1024 412.7 -> 434.2. So float32 only
        wide_paired = _table_override("widepaired",
                                      (1 if dtype == torch.float32 else 0, 0))[0] == 1
        # the wide band placed from a count histogram of the row in NB bins (qrita/backends/
        # triton/hist_band.py; ``histband=NBxPCT``, PCT percent of ``max_band`` entries) in
        # 8192-entry tiles at 8 warps (``histblock``): off (``histband=512x50`` turns it on).
        # H200, V = 131072 fp32, graph replay, us, sampled -> 512 bins: zipf topp0.9 B = 1
        # 163 -> 122, B = 8 163 -> 123, B = 64 196 -> 192, B = 256 440 -> 489, B = 1024 1484 ->
        # 1757; zipf topp0.99 B = 8 241 -> 129, B = 64 299 -> 198. Eager calls at B <= 8 are
        # host-bound, and it adds host work (the counters' fill and a second launch): B = 8
        # eager 481 -> 653 us (median of 5 interleaved rounds, a slow host). From B = 256 on
        # the histogram costs more than the sampled band (compute-bound: 670 us at B = 1024).
        # It cannot follow B (the band sets the grouping of the float sums that decide the
        # boundary: batch invariance). BENCHMARKS.md twenty-sixth session. (Two levels of float
        # mass bins summed per lane, ``levels``, were dropped: 82 us at B = 1 where the sampled
        # band takes 41, 4215 at B = 1024)
        hist_bins, hist_band_percent = _table_override("histband", (0, 50))
        # ``histone=1x0``: the last counting program of each row places its band (no fill, no
        # merge launch: the host work that slowed eager calls above). H200, V = 131072 fp32,
        # zipf topp0.9, graph replay, us, sampled band -> histone: B = 1 163 -> 117, B = 8
        # 163 -> 125, B = 64 196 -> 194, B = 1024 1484 -> 1760; eager B = 1 / 8 / 64 within the
        # host's noise of the sampled band (medians of 5 rounds 214 / 272 / 354 vs 229 / 260 /
        # 336). Counting a fixed 1 / 2 to 1 / 8 of each tile made the band miss more rows
        # (gaussian B = 64 53 of 64 finish on it): slower (BENCHMARKS.md twenty-seventh
        # session). Off: B >= 256 pays for B <= 8's gain
        hist_one_launch = _table_override("histone", (0, 0))[0] == 1
        hist_block, warps_hist = _table_override("histblock", (8192, 8))
        # the wide compaction's FLAT lanes (``wideflat=1x0`` / ``0x0``; sm90 SASS at 128 x 1:
        # no shared-memory round trips and barriers per appending tile, ~13% more
        # instructions). Nsight Compute, fp32 B = 1024: L1 79.7% busy, DRAM 20%. H200, V =
        # 131072, B = 1024, graph us (wide_compact us): fp32 zipf topp0.9 1491 -> 1402 (471 ->
        # 387), topp0.99 1652 -> 1556, gaussian topp0.9 1546 -> 1462; bf16 (256 x 1 tiles)
        # 498 -> 506 us in the kernel: fp32 only (BENCHMARKS.md twenty-seventh session)
        wide_flat = _table_override("wideflat", (int(dtype == torch.float32), 0))[0] == 1
        # (pass A with FLAT lanes, measured at 436fe24: slower, B = 1024 fp32 zipf candidates us
        # topp0.9 155.6 -> 168.2, k1000 ~244 -> 265.6: it is bound by its instructions, and
        # appends are rare there. Not kept)
        # 16-bit logits: the band spans a few keys with hundreds of copies each near T, and at
        # 75% of the slots its fullest segment overflows in ~40% of zipf top-p 0.9 rows (they
        # take the rounds); at 50% in ~4%, float32 unchanged (benchmarks/band_sim.py, a NumPy
        # model of the band that matches the H200's hit rates; BENCHMARKS.md thirteenth session)
        band_percent = _table_override("bandpct", (75 if dtype == torch.float32 else 50, 0))[0]
        # the 16-way rounds with each segment over 2 programs: fp32 topp0.9 B = 256
        # 510 -> 481 us, B = 64 gaussian 276 -> 253, B = 1024 unchanged (4 programs: B = 1024
        # +30 us). It sets the order of the partial sums, so it is the same at every B.
        round_split = _table_override("roundsplit", (2, 0))[0]
        # the 16-way rounds: up to ``rounds`` launches (default 4, was 3); a row stops narrowing
        # once its interval holds at most ``widefit`` percent of the slots (default 50; 0x0:
        # never, as before), so a row whose interval fits skips the rest and one that still
        # overflows gets a fourth round instead of the single-program fallback (H200, fp32
        # topp0.99 zipf, V = 131072: one such row costs ~330 µs: BENCHMARKS.md twenty-fifth
        # session)
        wide_rounds = _table_override("rounds", (4, 0))[0]
        wide_fit_percent = _table_override("widefit", (50, 0))[0]
        # at B > G, the launches after the band over the rows it missed only, listed by its
        # search (``widelist=Gx0``: G programs per segment share the list; 0x0: one per row
        # at every B, as before). At B = 1024 a round's 32768 programs (16 segments x 2)
        # mostly only exit. H200, V = 131072 fp32, graph us, one per row -> listed (G = 128):
        # B = 1024 zipf topp0.9 1237.1 -> 1166.6 (rounds 127.7 -> 52.3 for the 41 rows the
        # band missed), topp0.99 1373.9 -> 1324.6, gaussian topp0.9 1284.5 -> 1229.0,
        # topp0.99 1284.4 -> 1224.0; at B = 64 (G = 64) 2-3% slower (each listed launch waits
        # for the list before the row: 209.1 -> 212.9 zipf topp0.9), at B = 1 161.3 (152.6
        # one per row, another call and input):
        # hence B > G only (BENCHMARKS.md thirtieth session)
        wide_list = _table_override("widelist", (128, 0))[0]
        # no narrow launches at batches whose rows are not listed (``widelist``): each row's
        # last round program to arrive merges and narrows (four launches fewer with top-p's
        # wide stage). H200, fp32 zipf, V = 131072, graph us, narrow launches -> merged:
        # topp0.9 B = 1 154.0 -> 151.4, B = 64 205.4 -> 202.0; topp0.99 B = 1 178.3 -> 176.5,
        # B = 64 268.9 -> 263.5. Listed (B = 1024) it was slower: rounds 51 -> 68 us against
        # 7 us of narrow launches, 1166 -> 1176 (BENCHMARKS.md thirty-first session), hence
        # unlisted batches only. ``roundmerge=0x0``: never
        round_merge = _table_override("roundmerge", (1, 0))[0] == 1
        # ``roundatomic=1x0``: the rounds' partials go into per-row totals by integer atomics
        # (fixed-point masses only: the same integers in any order, so the same answer), not
        # into per-part slots (nseg x round_split x 64 words a row, of which the band's
        # compaction needs nseg x 64): B = 1024, V = 131072, fp32 workspace 41.0 -> 37.2 MiB
        # at two programs per segment, 49.0 -> 37.2 with ``roundlisted=4x0``; and the
        # narrowing reads 52 words a row instead of nseg x round_split x 48. H100 graph us,
        # per-part -> atomic (BENCHMARKS.md forty-ninth session): fp16 gaussian topp0.9
        # B = 256 499.8 -> 501.3, B = 1024 1337.6 -> 1344.6; bf16 zipf topp0.99 B = 1024
        # 877.4 -> 878.6; fp32 zipf topp0.9 B = 1024 1190 -> 1194 with peak extra memory
        # 41.0 -> 38.0 MiB: level in time, less scratch, hence the default. ``0x0``: per part
        # (interpreter: ``test_wide_round_atomic_totals_are_the_parts``)
        round_atomic = _table_override("roundatomic", (1, 0))[0] == 1
        # ``ahead=AxW`` / ``aheadsmall=AxW``: tiles in flight per program (1-4) in pass A (A)
        # and in the wide stage's compaction and rounds (W), at any batch / at batches of at
        # most SMALL_BATCH_ROWS. They change no sum, so they may follow B. Default 1x1 (one
        # tile prefetched, as before). H200, fp32 zipf top-p, graph us: 2x2 and 4x4 no faster at
        # B = 1 or 64, slower at B = 1024 (4x4: pass A 156 -> 191 us; BENCHMARKS.md thirty-first
        # session)
        ahead = _table_override("ahead", (1, 1))
        ahead_small = _table_override("aheadsmall", ahead)
        # ``widepacked=1x0``: the wide compaction's append positions by one 32-lane scan per
        # tile, each lane's row flags packed into 8-bit fields (``primitives.packed_prefix_
        # counts``), instead of one scan per 32-entry row (sm90 SASS at 128 x 1 FLAT: four
        # 5-step shuffle scans, ~105 instructions per appending tile, taken by ~95% of the
        # band's tiles). FLAT lanes only (a lane's entries 32 apart, so the packing's reshapes
        # move no data; contiguous lanes already scan once). The same positions. H200, with
        # ``widelean``, fp32 B = 1024 the band's compaction 324.9 -> 304.6 us (zipf topp0.9),
        # 326.1 -> 307.0 (gaussian), 336.8 -> 335.9 (zipf topp0.99); B = 1, 64 level
        # (BENCHMARKS.md thirty-third session): on (``widepacked=0x0`` turns it off)
        wide_packed = _table_override("widepacked", (1, 0))[0] == 1
        # ``widelean=1x0``: the wide compaction tests an entry's place against the interval
        # and the band by float32 compares against their bounds' values
        # (``primitives.lower_bound_value`` / ``upper_bound_value``; tiles padded with NaN
        # past V, which no compare takes) and weighs it without ``weights_of``'s guards where
        # nothing they guard is summed: no order key per entry. The same entries, weights and
        # sums (tested equal in the interpreter). sm90 SASS, the band's compaction at 128 x 1
        # FLAT fp32, loop instructions per 128-entry tile: 262 -> 234 (with ``widepacked``
        # 229 -> 200), registers 56 -> 64 (50 -> 56); bf16's keyed band (counted per value),
        # 256 x 1: 395 -> 329 (BENCHMARKS.md thirty-second session). H200, the compaction
        # kernel, us: fp32 B = 1024 383 -> 325 (zipf topp0.9), 386 -> 326 (gaussian); bf16
        # B = 1024 467 -> 427, B = 1 21.6 -> 17.4; fp32 B = 1 35 -> 32 (BENCHMARKS.md
        # thirty-third session): on (``widelean=0x0`` turns it off)
        wide_lean = _table_override("widelean", (1, 0))[0] == 1
        # ``wideunswitch=1x0``: with ``widelean``, a row whose interval and band reach no NaN
        # key and that holds no +inf (nearly every row) runs the compaction's loop without the
        # NaN terms of its tests and the +inf weights, and the keyed count takes an entry's
        # value index from its bits (a uniform branch between two loops; the same entries,
        # counts and sums). sm90 SASS as launched (``benchmarks/sass_loops.py``: tt.divisibility
        # on the pointers and 16-divisible ints), loop instructions per tile: the band's
        # compaction, 128 x 1 FLAT fp32, 200 -> 172; bf16's keyed count, 256 x 1, 285 -> 241.
        # H100 (forty-second session, BENCHMARKS.md), zipf graph us, with the fixed-point
        # masses, off -> on: fp32 topp0.9 B = 1024 1257.2 -> 1217.4 (compaction 334.3 ->
        # 292.6), topp0.99 1443.5 -> 1392.7; bf16 topp0.9 B = 1024 995.7 -> 923.4 (486.1 ->
        # 412.6), B = 64 158.1 -> 151.2; B = 1 level: on (``wideunswitch=0x0`` turns it off)
        wide_unswitch = _table_override("wideunswitch", (1, 0))[0] == 1
        # ``wideexp2=1x0``: with ``widelean``, the band compaction's (and the keyed count's)
        # weights as exp2((x - max) log2 e), exp's own computation without its fix-up for
        # results below 2^-126 (those weigh 0 instead of a subnormal): with ``wideunswitch``
        # 172 -> 160 (fp32), 241 -> 221 (keyed). Float masses only (the plan leaves it out
        # with ``widefixed``, the default), so it does nothing at the defaults. (The forty-
        # ninth session's A/B of it ran the same kernels both ways for that reason; what the
        # band's second pass spends on its weights, ``benchmarks/keyed_probe.py``: fp32
        # 185.5 -> 200.6 us at B = 1024, bf16 100.3 -> 129.2, H100.) Off
        wide_exp2 = _table_override("wideexp2", (0, 0))[0] == 1
        # ``widefixed=1x0``: every mass of the wide top-p stage (the band's, the rounds', the
        # search's and its fallback's) an int64 sum of fixed-point weights trunc(w * 2^40)
        # (``primitives.fixed_weight``): exact in any order, so no answer depends on where the
        # band lies, how a row is split into segments, programs or lanes, or the batch; the
        # band's placement and the stage's splits may then follow B. sm90 SASS as launched
        # (``benchmarks/sass_loops.py``), the band compaction's loop, fp32 128 x 1 FLAT,
        # instructions per tile: 200 -> 223, with ``wideunswitch`` 172 -> 197 (``wideexp2`` is
        # not used with it: every weight of the stage computed alike). V <= 2^23 (the sums'
        # int64 range). H100 (thirty-seventh session), fp32 zipf graph us, the default against
        # ``widefixed,histsmall=64`` (the fixed-point masses are what let the band follow B):
        # topp0.9 B = 1 138.4 -> 100.0, B = 64 197.2 -> 173.7, B = 1024 1209.6 -> 1275.9
        # (search 77.9 -> 111.6, compaction 310.9 -> 337.1); topp0.99 B = 1 164.2 -> 103.8,
        # B = 64 261.3 -> 181.9, B = 1024 1375.7 -> 1460.1: on (``widefixed=0x0`` turns it off)
        wide_fixed = _table_override("widefixed", (1, 0))[0] == 1
        # ``histsmall=Bx0`` (with ``widefixed``, whose answers do not depend on the band):
        # batches of at most B rows place the band from the count histogram in one launch
        # (``histone``; 512 bins unless ``histband`` sets them), larger ones from the sample.
        # The histogram's measured gains were at small batches only (graph us above: B = 1
        # 163 -> 117, B = 8 163 -> 125, B = 64 196 -> 194; B = 1024 1484 -> 1760). With the
        # fixed-point masses: see ``widefixed`` above. On at B <= 64
        hist_small_batch = _table_override("histsmall", (64, 0))[0]
        # ``histsplit=Hx0``: at those batches each segment's count over H programs (the counts
        # are integers, added by integer atomics: the same band). At B = 1 the count runs 16
        # programs over the row (11.3 us, H100 fp32 zipf topp0.9, thirty-seventh session's
        # profile): opt-in until timed
        hist_split = _table_override("histsplit", (1, 0))[0]
        # ``widesmall=TxW`` / ``roundsmall=Sx0`` (with ``histsmall``): at those batches the band
        # compaction's (tile, warps) and the 16-way rounds' programs per segment. With the
        # fixed-point masses no sum depends on them, so they may follow B. At B = 1 the
        # compaction runs 16 one-warp programs over the row (31.7 us, fp32 zipf topp0.9, thirty-
        # fourth session) and the rounds 32. ``widesmall=512x4`` at B <= 8 (``smallrows``
        # below); ``roundsmall`` off (B = 1 rounds 4.1 -> 4.4 us with 8)
        block_wide_small, warps_wide_small = _table_override("widesmall", (512, 4))
        round_split_small = _table_override("roundsmall", (0, 0))[0]
        # ``roundlisted=Nx0``: the rounds' programs per segment at batches whose missed rows are
        # listed (B > ``widelist``), fixed-point masses only. The few rows the band misses
        # there (~4% of zipf topp0.9 rows at B = 1024) take 2 programs per segment, and their
        # rounds cost 69 us (fp32 zipf topp0.9, 42 rows), 195 (topp0.99, 85 rows), 295 (fp16
        # gaussian topp0.9, 36 rows; H100, s46g). H100, graph us (rounds us), default -> 4x0
        # -> 8x0 (s47a, forty-eighth session): fp16 gaussian topp0.9 B = 256 498.3 (151.6) ->
        # 443.7 (99.2) -> 444.4 (101.0), B = 1024 1335.3 (240.7) -> 1326.4 (232.1) -> 1340.7
        # (242.8); fp32 zipf topp0.99 B = 256 472.2 (88.3) -> 472.4 (88.9) -> 486.8 (105.8),
        # B = 1024 (195, s46g) -> 1374.2 (192.9) -> 1403.1 (226.5). Off: the rounds' partials
        # are per row and part (``_workspace``), so 4x0 doubles them at every listed batch
        # (B = 1024: 8 -> 16 MiB of a ~41 MiB workspace) for one cell's gain; merged by integer
        # atomics per row instead, the split would cost no memory (to do). 0x0: ``roundsplit``
        round_split_listed = _table_override("roundlisted", (0, 0))[0]
        # ``smallrows=Nx0``: those two at batches of at most N rows only (0: every batch that
        # takes ``histsmall``). H100 (thirty-seventh session), fp32 zipf topp0.9 graph us with
        # ``widefixed,histsmall=64``: ``widesmall=512x4,roundsmall=8`` B = 1 100.0 -> 90.8
        # (compaction 22.0 -> 12.1), B = 64 173.7 -> 192.4 (compaction 29.8 -> 34.3, rounds
        # 10.5 -> 27.8). B = 8 not yet measured: 8 until it is
        wide_small_batch = _table_override("smallrows", (8, 0))[0]
        # ``roundrows=1x0``: the 16-way rounds keep their per-lane counts and masses as
        # (16 pivots, tile) instead of (tile, 16), so a tile's entry stays in the lane that
        # loaded it (sm90 SASS, 128 x 4: the (tile, 16) form moves every tile through shared
        # memory, 2 stores, 8 loads and 4 barriers per tile; loop 180 -> 145 instructions, no
        # barrier, registers 98 -> 72). The same counts; the masses' last reduction over the
        # lanes may group differently (fixed per (V, dtype) either way). H200, fp32 rounds
        # kernel, us: level at every batch (B = 1024 zipf topp0.9 48.8 -> 47.4, topp0.99
        # 153.7 -> 154.0; BENCHMARKS.md thirty-third session): off
        round_pivot_rows = _table_override("roundrows", (0, 0))[0] == 1
        # ``writecut=1x0``: the mask write of a wide row (mode 4) ranks the copies of T only in
        # the segment where the tie budget ends; every other segment keeps all its copies or
        # none, so it keeps the entries at or above one key, with no tie count per tile (a
        # block-wide reduction: sm90 SASS at 1024 x 4, shared-memory stores, loads and
        # barriers in every tile). The same entries. H200, the write kernel, us: bf16 B = 1024
        # 222 -> 147 (zipf topp0.9; bf16 rows hold many copies of T, which every tile ranked),
        # B = 64 17.9 -> 12.0; fp32 B = 1024 270.0 -> 267.5, B = 1 5.0 -> 3.6 (BENCHMARKS.md
        # thirty-third session): on (``writecut=0x0`` turns it off)
        write_cut = _table_override("writecut", (1, 0))[0] == 1
        # top-k alone at B <= SMALL_BATCH_ROWS (the pipeline: graph replays, QRITA_ONE_LAUNCH=0):
        # pass A in 2048-entry tiles, 8 warps, candidates appended by prefix sums only
        # (``sparsesmall``; one by one, ~7 per 1024-entry tile at topk50, cost the programs
        # most of their time). H200, V = 131072 fp32, graph replay, us, default (128 x 1) ->
        # 1024 x 8: masks zipf topk50 B = 1 62.9 -> 49.3, B = 8 57.0 -> 42.6, topk1000 B = 1
        # 63.3 -> 47.4, B = 8 62.4 -> 45.4; top_k zipf k50 B = 1 64.1 -> 50.7, k1000 73.4 ->
        # 56.6. B = 64 is slower (topk50 69.6 -> 84.5, topk1000 77.7 -> 92.2), so the limit is
        # 8 (BENCHMARKS.md twenty-first session). Then 1024 x 8 -> 2048 x 8 with prefix sums
        # only: pass A at B = 1 12.4 -> 7.6 us, masks topk50 B = 1 33.1 -> 28.6, B = 8 36.6 ->
        # 31.2, top_k k50 B = 1 35.1 -> 30.7 (4096 x 16 and 8192 x 16 in between; BENCHMARKS.md
        # twenty-second session)
        block_cand_small, warps_cand_small = _table_override("candsmall", (2048, 8))
        # ``sparsesmall=Nx0``: that pass A's ``sparse`` (-1: ``sparse``)
        sparse_small = _table_override("sparsesmall", (0, 0))[0]
        # ``searchb=0xW`` / ``cutoffb=0xW``: the search's and the cutoff kernel's warps at
        # those batches, top-k alone (0: as at any batch). The search at 8 warps (4 at larger
        # batches for the small-k search): H200, V = 131072 fp32 zipf, graph replay, us, masks
        # topk50 B = 1 28.6 -> 27.1 (search kernel 8.8 -> 7.7), top_k k50 B = 1 30.3 -> 28.7;
        # 2 warps slower (39.9); the cutoff's warps change nothing (BENCHMARKS.md twenty-second
        # and twenty-third sessions)
        warps_search_small_batch = _table_override("searchb", (0, 8))[1]
        warps_cutoff_small_batch = _table_override("cutoffb", (0, 0))[1]
        # the small-k search's slots per row (``capsmall=0x0``: the usual 4096). H200, V = 131072
        # fp32 zipf, graph replay, us, 4096 -> 2048 slots: masks topk50 B = 1 49.2 -> 33.7,
        # B = 8 42.6 -> 35.5, B = 64 70.1 -> 63.9, B = 1024 380.8 -> 367.0; top_k k50 B = 1
        # 50.9 -> 35.4, B = 1024 266.9 -> 246.9; extra memory at B = 1024 33.0 -> 17.0 MiB.
        # 1024 slots: 2x slower at B >= 64 (zipf rows keep up to ~850 candidates at the sample's
        # cutoff, ~53 per segment of 64 slots: segments overflow and rows take the fallback;
        # BENCHMARKS.md twenty-first session)
        cap_small = _table_override("capsmall", (2048, 0))[0]
        # candsmall for top-k + top-p with a scalar k too (``candsmallkp=0x0``: off). H200,
        # V = 131072 fp32 zipf topk100_topp0.9, graph replay, us: B = 1 55.8 -> 42.7, B = 8
        # 58.4 -> 43.9 (BENCHMARKS.md twenty-second session)
        cand_small_kp = _table_override("candsmallkp", (1, 0))[0] == 1
        # ``candmid=TxW`` / ``midrows=Nx0``: pass A's (tile, warps) for top-k alone at
        # SMALL_BATCH_ROWS < B <= N (default 128). H200, eighth session's sweep (pass A µs,
        # V = 131072 zipf topk50, B = 64): fp32 128 x 1 34.1, 256 x 1 22.7; bf16 22.0 -> 17.7;
        # at B = 1024 128 x 1 is the fastest (the default). H100 (fortieth session), graph
        # us, 128 x 1 -> 256 x 1: B = 64 fp32 topk50 66.8 -> 55.5, top_k k50 63.5 -> 52.1,
        # bf16 57.0 -> 46.4 / 56.4 -> 45.8 (512 x 1 no better; two tiles in flight no
        # better); B = 256 slower (fp32 128.8 -> 132.9 / 92.4 -> 96.6, bf16 90.1 -> 97.6 /
        # 80.5 -> 88.1). B = 128 (forty-first session, H100, graph us, midrows 64 -> 128):
        # fp32 topk50 86.8 -> 78.7, k50 71.6 -> 63.3, bf16 67.1 -> 58.8 / 65.4 -> 57.1:
        # 256 x 1 up to 128 rows
        block_cand_mid, warps_cand_mid = _table_override("candmid", (256, 1))
        cand_mid_rows = _table_override("midrows", (128, 0))[0]
        # ``capk=Sx0``: top-k alone with a scalar k whose candidates (the sample rule's
        # expectation, with room for a segment's spread) overflow the 4096 slots runs with up
        # to S slots per row (``large_k_config``; 0: off). H100, zipf V = 131072 fp32 graph us,
        # before it (forty-second session): k = 4096 B = 1 521, B = 1024 5543 (every row took
        # the full-row fallback; torch.topk 102 / 1835), k = 2048 80.7 / 1139
        cap_large = _table_override("capk", (8192, 0))[0]
    # ``selblock=Nx0``: the selection's write in N-entry tiles (0: the streaming tile). Its
    # programs keep a few candidates each; only a k == V row copies tiles, yet the tile sets
    # the kernel's registers. sm90 SASS, 4 warps (``benchmarks/sass_loops.py --kernel
    # select``): bf16's 4096 146 registers, fp32's 2048 56 and a 24-byte stack, 1024 40 and
    # none. H100 (forty-second session), zipf k = 50 B = 1024: the write 41.7 us bf16 against
    # 19.9 fp32. H100 (forty-third session, BENCHMARKS.md), zipf k = 50, graph us, unfused
    # search: fp32 B = 1024 278.5 (streaming tile) -> 275.4 (1024) -> 273.3 (512), the write
    # 20.0 -> 16.3 -> 14.5; bf16 B = 1024 225.6 at 512 against 244.1 for the fused search
    # (``selfuse``); B = 64 / 256 level. 512 (the interpreter's tiles are smaller)
    block_select = _table_override("selblock", (512, 0))[0]
    band_table, warps_band = _table_override("band", (0, 4)) if not interpret else (0, 4)
    # ``bandregs=Rx0``: at most R registers per thread in the band kernel (sm90 at 4 warps: 142,
    # so 3 programs per SM at B = 1024; 128 fits 4). Register allocation changes no result.
    # H200, fp32 B = 1024, the band kernel 158.7 -> 156.0 us (zipf topp0.9), 184.4 -> 180.3
    # (topp0.99); B = 1, 64 level (BENCHMARKS.md thirty-third session): 128 (``bandregs=0x0``:
    # no limit). (A launch option of NVIDIA's backend only, whose ROCm builds of torch get 0:
    # Triton's HIP options have no ``maxnreg``.)
    regs_band = (_table_override("bandregs", (128, 0))[0]
                 if not interpret and torch.version.hip is None else 0)
    # ``slotsregs=Rx0``: at most R registers per thread in pass A with load slots. sm90 SASS
    # (triton 3.9), fp32: top-p with two slots 72 (64 with the ring), top-k with four 72 (two:
    # 64). A one-warp program at 72 lets an SM hold 28 of them, not 32: top-p at B = 256 (4096
    # programs) then no longer fits in one wave, which would explain s44a's slower pass A there
    # (56.9 -> 64.6 us). At 64: no spills, except top-p with four slots (64 bytes of stack).
    # H100 (s45a): top-p with two slots at 64 wins at B = 256 and 1024 (above, ``slots``).
    # NVIDIA's launch option, as ``bandregs``; ``slotsregs=0x0``: no limit
    regs_slots = (_table_override("slotsregs", (64, 0))[0]
                  if not interpret and torch.version.hip is None else 0)
    # ``compactregs=Rx0``: at most R registers per thread in the wide band's compaction
    # (``wide_compact_kernel``, BAND), a one-warp program. sm90 SASS (triton 3.9): fp32 94
    # registers (21 programs an SM; at 80 no spill, 430 instructions a 128-entry turn against
    # 421), bf16 143 (14 an SM). bf16 rows take the keyed count (about 245-275 instructions a
    # 256-entry tile, unchanged at 96 or 80), yet the compaction loop they skip sets the
    # kernel's registers (at 96 it spills outside its loop, at 80 in it). H100, zipf topp0.9,
    # wide_compact us at none / 96 / 80 / 64 (s45b): fp32 B = 1024 293.2 / 292.9 / 285.9 /
    # 294.8, B = 256 89.9 / 89.8 / 89.3 / 94.1, B = 64 25.1 / 25.2 / 25.5 / 29.0; bf16 slower
    # at each (B = 1024 410.3 / 419.2 / 427.0 / 427.6), as is its count in a launch of its own
    # (below, at the keyed band). So 80 for float32, none for 16-bit rows (BENCHMARKS.md
    # forty-fifth session)
    regs_compact = (_table_override("compactregs", (80 if dtype == torch.float32 else 0, 0))[0]
                    if not interpret and torch.version.hip is None else 0)
    # ``wsearchregs=Rx0``: the same for the wide band's search (``wide_search_kernel``, BAND;
    # 8 warps): sm90 SASS fp32 119 registers, two programs an SM; at 80 three (104 bytes of
    # stack outside its loop, the loop 624 -> 643 instructions). H100, zipf topp0.9,
    # wide_search us, none -> 80 (s45b): fp32 B = 1024 111.8 -> 104.6, B = 256 40.7 -> 41.7,
    # B = 64 16.6 -> 17.5; bf16 B = 1024 26.3 -> 24.8, B = 256 / 64 level. 80
    # (``wsearchregs=0x0``: none)
    regs_wide_search = (_table_override("wsearchregs", (80, 0))[0]
                        if not interpret and torch.version.hip is None else 0)
    # the keyed band of 16-bit rows (``keyband=1x0`` / ``0x0``; also in the interpreter, so CI
    # runs it): the band's values counted, not copied, so a band holding T always finishes the
    # row, whatever its copies. Before it, a bf16 zipf top-p 0.99 row's band (a few values with
    # thousands of copies near T) overflowed the slots in every row: B = 1024 took 7461 us on
    # the H200 (BENCHMARKS.md twenty-seventh session)
    key_shift = {torch.bfloat16: 16, torch.float16: 13}.get(dtype, 0)
    key_shift = key_shift if _table_override("keyband", (1, 0))[0] == 1 else 0
    # (the count in a launch of its own, 72 registers per thread instead of 122: 466.6 us, and
    # 21.8 for the compaction's exits, vs 474.3 in one kernel at bf16 B = 1024; not kept. Its
    # time is its shared-memory histogram and weights: ~49 instructions per entry, sm90 SASS.
    # Tried again on the H100 (forty-fifth session, s45b, zipf topp0.9): 436.5 us at B = 1024
    # (432.2 with the count at 64 registers) against 410.3 in one kernel, B = 256 119.3
    # against 108.7; the count runs slower the more of its programs an SM holds)
    # ``selfuse=1x0``: sorted / unsorted ``top_k`` (scalar k below ``retry_min_k``) in one
    # launch after pass A: the search writes the selection (the same integers decide it, so
    # the same bits). Saves two launches and their gaps (H100, B = 64 fp32 k50: write_select
    # 2.2 us, sort 2.3, BENCHMARKS.md fortieth session). ``selfuse=1xR``: from R rows.
    # H100 (forty-second session, BENCHMARKS.md), zipf k = 50, graph us, off -> on: bf16
    # B = 16 40.4 -> 43.6, B = 64 47.0 -> 49.1, B = 256 80.3 -> 75.9, B = 1024 251.7 -> 244.7
    # (the selection's write 41.7 us there, fp32's 19.9); fp32 B = 256 90.8 -> 89.7, B = 1024
    # 278.6 -> 290.5 (the fused kernel 72.3 us against 61.3 for its three). Was on for 16-bit
    # rows from 256 rows until the selection's write got its 512-entry tile (``selblock``,
    # forty-third session): bf16 B = 1024 unfused 225.6 against fused 244.1, B = 256 74.8
    # against 75.7. Off (its test sets it)
    fused_select, fused_select_rows = _table_override("selfuse", (0, 0))
    fused_select = fused_select == 1
    block = min(block, next_pow2(vocab))
    seg_len = max(seg_min, -(-vocab // max_segs))
    seg_len = -(-seg_len // block) * block
    seg_len = min(seg_len, -(-vocab // block) * block)
    nseg = -(-vocab // seg_len)
    nseg_p2 = next_pow2(nseg)
    # ``keynarrow=Nx0``: a keyed band that spans at most N values (N <= 8) is widened to N
    # values, not to the histogram's 64, and counted in 4-bit fields per lane
    # (``wide._count_values_loop`` NARROW; only where a segment has at most 15 of the count's
    # tiles, so that no field can overflow: ``_plan``), no ``tl.histogram``: the histogram is
    # most of the keyed count's time whatever the band holds (H100, ``keyed_probe.py``, bf16
    # B = 1024, 1024 x 1: read 100.3 us, + weights 129.2, + histogram 409.8). A bf16 zipf
    # row's band spans at most 8 values before it is widened (``band_sim.py --key-bins 8``).
    # H100 graph us, off -> 8x0 (forty-ninth session, BENCHMARKS.md; the compaction's us):
    # bf16 zipf topp0.9 B = 64 141.9 -> 130.0 (27.8 -> 16.2), B = 256 268.2 -> 227.5
    # (101.4 -> 60.4), B = 1024 878.1 -> 718.6 (382.4 -> 223.7); topp0.99 B = 1024 879.1 ->
    # 719.3; bf16 gaussian topp0.99 B = 1024 924.5 -> 925.3 (its bands span more: the
    # histogram). float16 zipf topp0.99 B = 1024 936.2 -> 1063.3: its values are 8x finer,
    # so 8 of them miss T (rounds 14.1 -> 118.8 us). Default 8 for bfloat16 (also in the
    # interpreter), off for float16
    key_narrow = _table_override("keynarrow", (8 if dtype == torch.bfloat16 else 0, 0))[0]
    key_narrow = min(key_narrow, 8) if key_shift else 0
    # the top-k retry (two launches more, whose programs exit unless their row retries; their
    # cost was not measured apart) where a row's cutoff can fall short:
    # k >= 256 on a GPU (large k: the sample's rank is near the slots' limit); every k > 4 in
    # the interpreter, so CI runs it
    retry_min_k = 5 if interpret else 256
    band_sample = max(16, min(band_table or 2 * sample, next_pow2(vocab)))
    slots = nseg_p2 * max(cap // nseg_p2, 16)
    wide_fit = slots * wide_fit_percent // 100 if wide_fit_percent > 0 else -1
    sample = max(16, min(sample, next_pow2(vocab)))
    return PipelineConfig(block=block, seg_len=seg_len, nseg=nseg, nseg_p2=nseg_p2,
                          cap_seg=max(cap // nseg_p2, 16), sample=sample,
                          warps_stream=4, warps_search=warps_search, dense=dense,
                          block_cand=min(block_cand, block), warps_cand=warps_cand, sparse=sparse,
                          block_cand_one=_tile_in_segment(block_cand_one, seg_len),
                          sparse_one=sparse_one,
                          band_sample=band_sample, warps_band=warps_band or 4,
                          regs_band=regs_band, regs_slots=regs_slots,
                          regs_compact=regs_compact, regs_wide_search=regs_wide_search,
                          block_wide=min(block_wide, block),
                          warps_wide=warps_wide, sparse_wide=sparse_wide,
                          retry_min_k=retry_min_k, dense_small=dense_small,
                          warps_small=warps_small,
                          block_write=min(block_write, block) if block_write else 0,
                          block_select=min(next_pow2(block_select), block)
                          if block_select > 0 else 0,
                          warps_write=warps_write, warps_cutoff=warps_cutoff,
                          block_round=block_round, warps_round=warps_round,
                          block_wide2=min(block_wide2, block), warps_wide2=warps_wide2,
                          lean_mass=lean_mass, hist_bins=hist_bins,
                          hist_band_percent=hist_band_percent,
                          hist_block=_tile_in_segment(hist_block, seg_len), warps_hist=warps_hist,
                          hist_one_launch=hist_one_launch,
                          hist_split=hist_split if hist_split > 1 and seg_len % hist_split == 0
                          else 1,
                          wide_flat=wide_flat, key_shift=key_shift, key_narrow=key_narrow,
                          band_percent=band_percent,
                          wide_rounds=wide_rounds, wide_fit=wide_fit, wide_list=wide_list,
                          round_merge=round_merge, round_atomic=round_atomic,
                          wide_packed=wide_packed,
                          wide_lean=wide_lean, round_pivot_rows=round_pivot_rows,
                          wide_unswitch=wide_unswitch, wide_exp2=wide_exp2, cand_top=cand_top,
                          tile_slots=tile_slots if tile_slots in (2, 4) else 0,
                          slots_topp_rows=slots_topp_rows,
                          wide_paired=wide_paired,
                          wide_fixed=wide_fixed and vocab <= FIXED_MAX_VOCAB,
                          hist_small_batch=hist_small_batch
                          if wide_fixed and vocab <= FIXED_MAX_VOCAB else 0,
                          block_wide_small=min(block_wide_small, block),
                          warps_wide_small=warps_wide_small,
                          round_split_small=round_split_small
                          if round_split_small > 0
                          and seg_len % (round_split_small * block_round) == 0 else 0,
                          round_split_listed=round_split_listed
                          if round_split_listed > 0 and wide_fixed and vocab <= FIXED_MAX_VOCAB
                          and seg_len % (round_split_listed * block_round) == 0 else 0,
                          wide_small_batch=wide_small_batch,
                          write_cut=write_cut,
                          ahead=tuple(min(max(n, 1), 4) for n in ahead),
                          ahead_small=tuple(min(max(n, 1), 4) for n in ahead_small),
                          round_split=round_split if seg_len % (round_split * block_round) == 0
                          else 1,
                          block_cand_small=_tile_in_segment(block_cand_small, seg_len),
                          sparse_small=sparse_small, sparse_large=sparse_large,
                          warps_search_small_batch=warps_search_small_batch,
                          warps_cutoff_small_batch=warps_cutoff_small_batch,
                          warps_cand_small=warps_cand_small,
                          cap_small=min(cap_small, cap) if cap_small > 0 else 0,
                          cand_small_kp=cand_small_kp,
                          block_cand_mid=_tile_in_segment(block_cand_mid, seg_len),
                          warps_cand_mid=warps_cand_mid, cand_mid_rows=cand_mid_rows,
                          fused_select=fused_select, fused_select_rows=fused_select_rows,
                          cap_large=cap_large)


@functools.lru_cache(maxsize=4096)
def small_k_search(cfg: PipelineConfig, vocab: int, k: int) -> bool:
    """Whether a top-k call with scalar k takes the small-k search (``cfg.dense_small`` lanes):
    when the σ-cutoff's sample rule (docs/algorithm.md §2, its order-statistic branch) expects
    at most that many candidates per row, ceil(r + 3 sqrt(r) + 3) x V / SAMPLE with
    r = k x SAMPLE / V. Only speed depends on it (rows with more take the slot search)."""
    if cfg.dense_small <= 0 or not 0 < k < vocab:
        return False
    sample = min(cfg.sample, vocab)
    r_k = k * sample / vocab
    expected = math.ceil(r_k + 3.0 * math.sqrt(r_k) + 3.0) * vocab / sample
    return expected <= cfg.dense_small


@functools.lru_cache(maxsize=256)
def _small_cap_config(cfg: PipelineConfig) -> PipelineConfig:
    return replace(cfg, cap_seg=max(cfg.cap_small // cfg.nseg_p2, 16), cap_small=0)


@functools.lru_cache(maxsize=256)
def _small_batch_hist_config(cfg: PipelineConfig, small_settings: bool = True) -> PipelineConfig:
    """``cfg`` with the band from the one-launch count histogram, and (``small_settings``) the
    small batches' compaction tile, warps and round split."""
    small = dict(block_wide=cfg.block_wide_small or cfg.block_wide,
                 warps_wide=cfg.warps_wide_small or cfg.warps_wide,
                 round_split=cfg.round_split_small or cfg.round_split) if small_settings else {}
    return replace(cfg, hist_bins=cfg.hist_bins or HIST_SMALL_BINS, hist_one_launch=True,
                   hist_small_batch=0, block_wide_small=0, warps_wide_small=0,
                   round_split_small=0, wide_small_batch=0, **small)


def round_atomic(cfg: PipelineConfig) -> bool:
    """Whether the wide rounds add their partials into per-row totals by integer atomics
    (``roundatomic``, with the fixed-point masses only: float sums would follow the order)."""
    return cfg.round_atomic and cfg.wide_fixed


@functools.lru_cache(maxsize=256)
def _listed_rounds_config(cfg: PipelineConfig) -> PipelineConfig:
    """``cfg`` with the listed batches' programs per segment in the rounds (``roundlisted``)."""
    return replace(cfg, round_split=cfg.round_split_listed, round_split_listed=0)


@functools.lru_cache(maxsize=4096)
def large_k_config(cfg: PipelineConfig, vocab: int, k: int) -> PipelineConfig | None:
    """``cfg`` with more slots per row for top-k alone with a scalar k whose candidates
    overflow ``cfg.cap`` (None: keep ``cfg``). The sample rule's expected candidates (as in
    :func:`small_k_search`), ``c`` per segment, get ``c + 4 sqrt(c) + 8`` slots per segment
    (a power of two) when that is more than ``cfg.cap_seg``, within ``cfg.cap_large`` slots
    per row and at most half the row. Only scratch size and speed depend on it: a segment
    that still overflows sends its row to the exact fallback, as at any capacity."""
    if cfg.cap_large <= cfg.cap or not 0 < k < vocab:
        return None
    sample = min(cfg.sample, vocab)
    r_k = k * sample / vocab
    expected = math.ceil(r_k + 3.0 * math.sqrt(r_k) + 3.0) * vocab / sample
    per_seg = expected / cfg.nseg
    cap_seg = next_pow2(math.ceil(per_seg + 4.0 * math.sqrt(per_seg) + 8.0))
    slots = cfg.nseg_p2 * cap_seg
    if cap_seg <= cfg.cap_seg or slots > cfg.cap_large or 2 * slots > vocab:
        return None
    return replace(cfg, cap_seg=cap_seg, cap_small=0)


def call_config(cfg: PipelineConfig, vocab: int, k, p, batch: int = 0) -> PipelineConfig:
    """The config one call runs with: ``cfg``, or for top-k alone with a scalar k that takes the
    small-k search, ``cfg`` with ``cap_small`` slots per row (only scratch size and speed depend
    on it, never the answer: an overflowing segment sends its row to the exact fallback), or
    with a k whose candidates overflow the usual slots, more of them (:func:`large_k_config`);
    or,
    with top-p and fixed-point masses at a batch of at most ``hist_small_batch`` rows, ``cfg``
    with the band from the one-launch count histogram (only speed depends on the band there),
    and at a batch whose missed rows are listed, the rounds' split ``round_split_listed``."""
    if p is not None and 0 < batch <= cfg.hist_small_batch:
        return _small_batch_hist_config(
            cfg, cfg.wide_small_batch <= 0 or batch <= cfg.wide_small_batch)
    if p is not None and cfg.round_split_listed > 0 and 0 < cfg.wide_list < batch:
        return _listed_rounds_config(cfg)
    if p is not None or k is None or isinstance(k, torch.Tensor):
        return cfg
    if cfg.cap_small <= 0 or not small_k_search(cfg, vocab, int(k)):
        return large_k_config(cfg, vocab, int(k)) or cfg
    return _small_cap_config(cfg)


def _tile_in_segment(tile: int, seg_len: int) -> int:
    """The largest power of two at most ``tile`` that divides ``seg_len`` (pass A's tiles must
    not straddle two segments: its first tile's load is bounded by V only)."""
    while tile > 1 and seg_len % tile:
        tile //= 2
    return tile


@functools.lru_cache(maxsize=1024)
def _plan(cfg: PipelineConfig, has_k: bool, k_array: bool, has_p: bool, p_array: bool,
          smallest: bool, select: bool, wide: bool, retry: bool,
          small: bool = False, small_batch: bool = False,
          listed: bool = False, ahead: tuple[int, int] = (1, 1),
          mid_batch: bool = False, tile_slots: int = 0) -> dict[str, dict]:
    """The constexpr / launch-option keyword arguments of each launch of one call, built once
    per (config, argument kinds): every call runs this host code, so it is kept out of it."""
    flags = dict(HAS_K=has_k, K_ARRAY=k_array, HAS_P=has_p, P_ARRAY=p_array)
    block_cand = cfg.block_cand or cfg.block
    warps_cand = cfg.warps_cand or cfg.warps_stream
    sparse_cand = cfg.sparse if (cfg.sparse_large < 0 or not retry) else cfg.sparse_large
    warps_cutoff = cfg.warps_cutoff or cfg.warps_stream
    if small_batch:
        block_cand, warps_cand = cfg.block_cand_small, cfg.warps_cand_small
        sparse_cand = sparse_cand if cfg.sparse_small < 0 else cfg.sparse_small
        if not has_p:  # (with top-p, float sums' order may follow the warps: batch invariance)
            warps_cutoff = cfg.warps_cutoff_small_batch or warps_cutoff
    elif mid_batch:
        block_cand, warps_cand = cfg.block_cand_mid, cfg.warps_cand_mid
    seg = dict(CAP_SEG=cfg.cap_seg, NSEG_P2=cfg.nseg_p2)
    dense, warps_search = (cfg.dense_small, cfg.warps_small) if small else (cfg.dense,
                                                                           cfg.warps_search)
    if small_batch and not has_p and cfg.warps_search_small_batch:
        warps_search = cfg.warps_search_small_batch
    plan = {
        "cutoff": dict(flags, SMALLEST=smallest, SAMPLE=cfg.sample, OVERSAMPLE=cfg.oversample,
                       num_warps=warps_cutoff),
    }
    slots = (tile_slots if tile_slots > 0 and cfg.seg_len % (tile_slots * block_cand) == 0
             else 0)
    for again in (False, True):
        plan[f"candidates_{again}"] = dict(flags, SMALLEST=smallest, BLOCK=block_cand, **seg,
                                           SPARSE=sparse_cand, ONLY_RETRY=again,
                                           LEAN=cfg.lean_mass and has_p, AHEAD=ahead[0],
                                           CAND_TOP=cfg.cand_top and not has_p,
                                           SLOTS=slots,
                                           **({"maxnreg": cfg.regs_slots}
                                              if slots and cfg.regs_slots else {}),
                                           num_warps=warps_cand)
        for stage in (0, 1, 2):
            # the second stage holds every slot in registers (and the fallback): warps_search
            # warps whatever the dense packing's
            plan[f"threshold_{again}_{stage}"] = dict(
                flags, SMALLEST=smallest, SELECT=select, WIDE=wide, BLOCK=cfg.block, **seg,
                DENSE=min(dense, cfg.cap), SAMPLE=cfg.sample,
                RETRY=retry and not again, ONLY_RETRY=again, STAGE=stage,
                WIDE_FIXED=wide and cfg.wide_fixed,
                num_warps=cfg.warps_search if stage == 2 else warps_search)
    sparse_wide = cfg.sparse if cfg.sparse_wide < 0 else cfg.sparse_wide
    for band in (True, False):
        # after the rounds only the rows the band missed compact (a few programs: latency, not
        # bandwidth, bounds them)
        block_c = (cfg.block_wide or block_cand) if band else cfg.block_wide2
        warps_c = (cfg.warps_wide or warps_cand) if band else cfg.warps_wide2
        key_shift = cfg.key_shift if band else 0
        plan[f"compact_{band}"] = dict(BLOCK=block_c, **seg, SPARSE=sparse_wide, BAND=band,
                                       FLAT=cfg.wide_flat, KEY_SHIFT=key_shift,
                                       LISTED=listed and not band, AHEAD=ahead[1],
                                       PACKED=cfg.wide_packed and cfg.wide_flat
                                       and block_c % 32 == 0 and block_c <= 256,
                                       LEAN=cfg.wide_lean,
                                       UNSWITCH=cfg.wide_unswitch and cfg.wide_lean,
                                       # (not with fixed-point masses: every weight of
                                       # the stage must be computed alike)
                                       EXP2=cfg.wide_exp2 and cfg.wide_lean and band
                                       and not cfg.wide_fixed,
                                       FIXED=cfg.wide_fixed,
                                       PAIRED=cfg.wide_paired
                                       and cfg.seg_len % (2 * block_c) == 0,
                                       # (4-bit fields: at most 15 tiles a segment)
                                       NARROW=cfg.key_narrow if key_shift
                                       and -(-cfg.seg_len // block_c) <= 15 else 0,
                                       num_warps=warps_c,
                                       **({"maxnreg": cfg.regs_compact}
                                          if band and cfg.regs_compact else {}))
        plan[f"search_{band}"] = dict(BLOCK=cfg.block, **seg, BAND=band, KEY_SHIFT=key_shift,
                                      LISTED=listed and not band, FIXED=cfg.wide_fixed,
                                      num_warps=cfg.warps_search,
                                      **({"maxnreg": cfg.regs_wide_search}
                                         if band and cfg.regs_wide_search else {}))
    plan["band"] = dict(SAMPLE=cfg.band_sample, KEY_SHIFT=cfg.key_shift,
                        NARROW=cfg.key_narrow, num_warps=cfg.warps_band,
                        **({"maxnreg": cfg.regs_band} if cfg.regs_band else {}))
    if cfg.hist_bins:
        plan["hist_count"] = dict(NB=cfg.hist_bins,
                                  BLOCK=_tile_in_segment(cfg.hist_block,
                                                         cfg.seg_len // cfg.hist_split),
                                  MERGE=cfg.hist_one_launch, STEPS=cfg.hist_bins.bit_length(),
                                  num_warps=cfg.warps_hist)
        plan["hist_merge"] = dict(NB=cfg.hist_bins, STEPS=cfg.hist_bins.bit_length(),
                                  num_warps=cfg.warps_stream)
    plan["round"] = dict(BLOCK=min(cfg.block_round, cfg.block), LISTED=listed,
                         MERGE=cfg.round_merge and not listed, AHEAD=ahead[1],
                         PIVOT_ROWS=cfg.round_pivot_rows,
                         NSEG_P2=next_pow2(cfg.nseg * cfg.round_split), FIXED=cfg.wide_fixed,
                         ATOMIC=round_atomic(cfg),
                         num_warps=cfg.warps_round or cfg.warps_stream)
    plan["narrow"] = dict(NSEG_P2=next_pow2(cfg.nseg * cfg.round_split), LISTED=listed,
                          FIXED=cfg.wide_fixed, ATOMIC=round_atomic(cfg),
                          num_warps=cfg.warps_stream)
    return plan


_WORKSPACE_PARTS = ("cutoff", "cand_val", "cand_idx", "seg_f", "seg_i", "seg_before", "row_f",
                    "part_i", "part_f", "round_i", "round_f", "miss", "arrive", "row_info")


def _workspace_widths(cfg: PipelineConfig, wide: bool, has_row_info: bool) -> tuple[int, ...]:
    """Int32 words per row of each of :func:`_workspace`'s parts (``_WORKSPACE_PARTS``)."""
    fixed = wide and cfg.wide_fixed
    atomic = wide and round_atomic(cfg)
    # (the rounds' parts per segment: one with their per-row totals, else ``round_split``)
    split = 1 if atomic else cfg.round_split
    return (2 if fixed else 1, cfg.cap, cfg.cap, cfg.nseg * 4, cfg.nseg * 8, cfg.nseg * 2, 8,
            cfg.nseg * max(split * 32, KEY_PART.value if cfg.key_shift else 0)
            if wide else 0,
            cfg.nseg * split * 16 * (2 if fixed else 1) if wide else 0,
            16 if atomic else 0,  # the rounds' per-row totals: 16 int32 counts,
            36 if atomic else 0,  # then 16 int64 masses and the two key bounds (int64)
            2 if wide else 0,  # the rows the band missed: a count, then their indices
            1 if wide else 0,  # each row's arrival counter in the rounds (``round_merge``)
            0 if has_row_info else ROW_INFO)


def mask_scratch_words(batch: int, vocab: int, dtype: torch.dtype, k, p) -> int:
    """Int32 words of scratch that :func:`launch_mask` of (``batch``, ``vocab``) rows with
    these ``k`` / ``p`` takes inside :func:`arena.scratch_arena` (an upper bound).

    ``k`` / ``p``: None, a Python scalar, or any tensor (B,) (its kind is what counts: a meta
    tensor will do). Inside an arena the pipeline runs as under a capture (no one-launch
    kernels, no kept buffers), so its scratch is the workspace and the band histogram's counters.
    """
    if batch == 0 or vocab == 0:
        return 0
    cfg = call_config(pipeline_config(vocab, dtype), vocab, k, p, batch)
    k_array = isinstance(k, torch.Tensor)
    k_every_row = k is not None and not k_array and 0 < int(k) < vocab
    wide = p is not None and not k_every_row
    words = batch * sum(_workspace_widths(cfg, wide, False))
    if wide and cfg.hist_bins:
        words += arena.ALIGN_WORDS + batch * (cfg.hist_bins + 1)
    return words + arena.ALIGN_WORDS


def _workspace(batch: int, cfg: PipelineConfig, device: torch.device, row_info, wide: bool):
    """All scratch of one call in one allocation (int32 words; float32 parts are views).

    Size per row: cap candidates x 8 bytes + 60 bytes per segment + 36 bytes, i.e.
    O(B x cap), never O(V) per program (the 36 bytes: 52 since the band kernel reads the row mass);
    with top-p's wide stage, 32 words per segment and round part, 16 more (``wide.KEY_PART``,
    the keyed band's value counts, 16-bit rows); with its fixed-point masses (``widefixed``)
    16 more per segment and round part (int64 masses), and ``cutoff`` two words per row so that
    ``row_f`` and ``part_f`` start 8-byte aligned (every other width is even).
    """
    names = _WORKSPACE_PARTS
    atomic = wide and round_atomic(cfg)
    widths = _workspace_widths(cfg, wide, row_info is not None)
    # one allocation and one split (flat per-part chunks: the kernels index rows themselves);
    # few host calls, this runs on every call. Inside ``arena.scratch_arena``: the caller's.
    flat = arena.take(batch * sum(widths))
    if flat is None:
        flat = torch.empty(batch * sum(widths), dtype=torch.int32, device=device)
    parts = dict(zip(names, flat.split([batch * w for w in widths]), strict=True))
    for name in ("cand_val", "seg_f", "row_f", "part_f", "round_f"):
        parts[name] = parts[name].view(torch.float32)
    if atomic:  # the totals start at zero (each narrowing sets its row's back to zero)
        start = batch * sum(widths[:names.index("round_i")])
        flat[start:start + batch * (16 + 36)].zero_()
    parts["row_info"] = row_info if row_info is not None else parts["row_info"].view(batch, ROW_INFO)
    return parts


def pass_a_slots(cfg: PipelineConfig, has_p: bool, batch: int) -> int:
    """Pass A's load slots for a call (``slots``; 0: the ring): ``cfg.tile_slots``, for calls
    with top-p only at batches of at most ``cfg.slots_topp_rows`` rows (0: every batch). No
    sum depends on them."""
    if has_p and 0 < cfg.slots_topp_rows < batch:
        return 0
    return cfg.tile_slots


def _search(x, k, p, cfg, *, smallest, select, out, sel_val, sel_idx, fill, row_info,
            fused_sort=None):
    """Launches 0, 1 and 2: cutoff per row, candidates per segment, then the per-row search
    (and fallback); with top-p on a mask, the wide stage's launches. ``fused_sort`` (a
    selection with :func:`fused_select_applies`): None, or whether the search's launch also
    writes the selection sorted (False: in index order): ``threshold_select_kernel``."""
    batch, vocab = x.shape
    k_array = isinstance(k, torch.Tensor)
    # the wide stage takes top-p rows without top-k: none when a scalar k applies to every row
    # (its launches would only exit: ~70 µs at B=1024)
    k_every_row = k is not None and not k_array and 0 < int(k) < vocab
    wide = p is not None and not select and not k_every_row
    ws = _workspace(batch, cfg, x.device, row_info, wide)
    cand_val, cand_idx, seg_f, seg_i = ws["cand_val"], ws["cand_idx"], ws["seg_f"], ws["seg_i"]
    seg_before, row_info = ws["seg_before"], ws["row_info"]
    p_array = isinstance(p, torch.Tensor)
    retry = k is not None and (k_array or int(k) >= cfg.retry_min_k)
    small = p is None and k is not None and not k_array and small_k_search(cfg, vocab, int(k))
    # ``candsmall`` (when set): top-k alone at small batches, whose pass A sums no floats (and,
    # with ``cand_small_kp``, top-k + top-p with a scalar k: no masses in pass A either)
    small_batch = ((p is None or (cfg.cand_small_kp and k_every_row))
                   and batch <= SMALL_BATCH_ROWS and cfg.block_cand_small > 0
                   and cfg.warps_cand_small > 0)
    # ``candmid`` (when set): the same calls at SMALL_BATCH_ROWS < B <= ``cand_mid_rows``
    mid_batch = ((p is None or (cfg.cand_small_kp and k_every_row))
                 and SMALL_BATCH_ROWS < batch <= cfg.cand_mid_rows and cfg.block_cand_mid > 0
                 and cfg.warps_cand_mid > 0)
    # the launches after the wide band over a list of the rows it missed, at batches larger
    # than the list's programs (``wide_list``); smaller batches keep one program per row
    listed = wide and 0 < cfg.wide_list < batch
    # tiles in flight per program in pass A and the wide stage's streams (``ahead``,
    # ``aheadsmall`` at batches of at most SMALL_BATCH_ROWS): no sum depends on them
    ahead = cfg.ahead_small if batch <= SMALL_BATCH_ROWS else cfg.ahead
    tile_slots = pass_a_slots(cfg, p is not None, batch)
    plan = _plan(cfg, k is not None, k_array, p is not None, p_array, smallest, select, wide,
                 retry, small, small_batch, listed, ahead, mid_batch, tile_slots)
    k_ptr = k if k_array else seg_i
    p_ptr = p if p_array else seg_f
    k_scalar = 0 if (k is None or k_array) else int(k)
    p_scalar = 0.0 if (p is None or p_array) else float(p)
    stride_x = x.stride(0)
    cutoff = ws["cutoff"]
    # every launch's specialization, named once for the call (fastlaunch.launch_site): the
    # config and the argument kinds give the constexprs and options, the tokens the runtime
    # arguments' (the workspace parts' alignment depends on B)
    site = _site_id((cfg, k is not None, k_array, p is not None, p_array, smallest, select, wide,
                     retry, small, small_batch, listed, ahead, mid_batch, tile_slots,
                     *map(_SPEC, (x, k_ptr, p_ptr, vocab, stride_x, k_scalar)),
                     _SPEC(out.stride(0)) if out is not None else None,
                     *map(_SPEC, (out, sel_val, sel_idx, *ws.values())),
                     out is not None and out.data_ptr() == x.data_ptr()))
    launch_site((site, "cutoff"), cutoff_kernel, (batch,),
                x, k_ptr, p_ptr, vocab, stride_x, k_scalar, p_scalar, cfg.max_cands, cutoff,
                **plan["cutoff"])
    # with ``retry``, top-k rows whose cutoff fell short (mode 5) run pass A and the search again
    for again in (False, True) if retry else (False,):
        launch_site((site, "candidates", again), candidates_kernel, (batch, cfg.nseg),
                    x, k_ptr, p_ptr, cutoff, vocab, stride_x, cfg.seg_len, k_scalar, p_scalar,
                    row_info, cand_val, cand_idx, seg_f, seg_i, **plan[f"candidates_{again}"])
        if fused_sort is not None:  # (no retry, one stage: fused_select_applies)
            thr = plan["threshold_False_0"]
            # (the sort's width follows k's value: part of the site, which fixes every
            # constexpr of the launch)
            k_p2 = max(16, next_pow2(k_scalar)) if fused_sort else 16
            launch_site((site, "threshold_select", fused_sort, k_p2), threshold_select_kernel,
                        (batch,), x, cand_val, cand_idx, seg_f, seg_i, vocab, stride_x,
                        k_scalar, cfg.nseg, sel_val, sel_idx, row_info, ws["row_f"],
                        seg_before, SMALLEST=smallest, SORTED=fused_sort, K_P2=k_p2,
                        BLOCK=thr["BLOCK"], CAP_SEG=thr["CAP_SEG"], NSEG_P2=thr["NSEG_P2"],
                        DENSE=thr["DENSE"], SAMPLE=thr["SAMPLE"], num_warps=thr["num_warps"])
            continue
        for stage in threshold_stages(k is not None, p is not None):
            launch_site((site, "threshold", again, stage), threshold_kernel, (batch,),
                        x, k_ptr, p_ptr, cand_val, cand_idx, seg_f, seg_i,
                        vocab, stride_x, out.stride(0) if out is not None else 0, k_scalar,
                        p_scalar, float(fill), cfg.nseg,
                        out if out is not None else x, sel_val if sel_val is not None else x,
                        sel_idx if sel_idx is not None else cand_idx, row_info, ws["row_f"],
                        seg_before, cutoff, **plan[f"threshold_{again}_{stage}"])
    if wide:
        row_f, part_i, part_f, miss = ws["row_f"], ws["part_i"], ws["part_f"], ws["miss"]
        arrive = ws["arrive"]
        # the rounds' partials: per-row totals (``roundatomic``), else per segment and part
        round_i, round_f = ((ws["round_i"], ws["round_f"]) if round_atomic(cfg)
                            else (part_i, part_f))
        # after the band: programs for the rows it missed only (``widelist``), or one per row
        list_programs = cfg.wide_list if listed else batch

        def compact_and_search(band: bool):
            rows = batch if band else list_programs
            launch_site((site, "compact", band), wide_compact_kernel, (rows, cfg.nseg),
                        x, row_info, row_f, vocab, stride_x, cfg.seg_len, cand_val, cand_idx,
                        seg_i, part_i, part_f, miss, **plan[f"compact_{band}"])
            launch_site((site, "search", band), wide_search_kernel, (rows,),
                        x, cand_val, cand_idx, seg_i, row_info, row_f, part_i, part_f, vocab,
                        stride_x, out.stride(0), float(fill), cfg.nseg, out, seg_before, miss,
                        arrive, **plan[f"search_{band}"])

        if cfg.hist_bins:
            limit = int(cfg.max_band * cfg.hist_band_percent / 100)
            if cfg.hist_one_launch:
                counters = hist_band_scratch(batch * (cfg.hist_bins + 1), x.device)
                bin_counts, arrivals = counters[batch:], counters[:batch]
            else:
                # the row's bin counters: integer atomics add into them, zero first
                bin_counts = arena.take(batch * cfg.hist_bins, zero=True)
                if bin_counts is None:
                    bin_counts = torch.zeros((batch, cfg.hist_bins), dtype=torch.int32,
                                             device=x.device)
                else:
                    bin_counts = bin_counts.view(batch, cfg.hist_bins)
                arrivals = bin_counts
            # (each segment over ``hist_split`` programs: integer counts, the same band)
            launch_site((site, "hist_count"), hist_band_count_kernel,
                        (batch, cfg.nseg * cfg.hist_split),
                        x, row_info, row_f, vocab, stride_x, cfg.seg_len // cfg.hist_split,
                        limit, bin_counts, arrivals, **plan["hist_count"])
            if not cfg.hist_one_launch:
                launch_site((site, "hist_merge"), hist_band_merge_kernel, (batch,),
                            row_info, row_f, bin_counts, vocab, limit, **plan["hist_merge"])
        else:
            launch_site((site, "band"), wide_band_kernel, (batch,),
                        x, row_info, row_f, vocab, stride_x, cfg.max_band, **plan["band"])
        compact_and_search(True)  # the band: finishes the rows it holds
        # the rows it missed; a round may split each segment over ``round_split`` programs
        # (its partial counts are then per part, merged in their fixed order)
        parts = cfg.nseg * cfg.round_split
        for _ in range(cfg.wide_rounds):
            launch_site((site, "round"), wide_round_kernel, (list_programs, parts),
                        x, row_info, row_f, vocab, stride_x, cfg.seg_len // cfg.round_split,
                        cfg.wide_fit, round_i, round_f, miss, arrive, **plan["round"])
            if listed or not cfg.round_merge:
                launch_site((site, "narrow"), wide_narrow_kernel, (list_programs,),
                            row_info, row_f, round_i, round_f, miss, parts, cfg.wide_fit,
                            **plan["narrow"])
        compact_and_search(False)
    return cand_val, cand_idx, seg_i, seg_before, row_info, site


def chunk_rows(batch: int) -> int:
    """Rows per pipeline pass: ``QRITA_CHUNK_ROWS`` (unset or 0: the whole batch at once).

    Scratch is O(rows in flight): running a large batch in chunks of rows bounds it (e.g. 256
    rows: ~8.5 MiB at V=131072 instead of 33 MiB at B=1024) at the cost of more launches. Rows do
    not depend on each other, so the answer is the same. Off until measured on a GPU
    (``benchmarks/device_session.sh onelaunch`` runs B=1024 both ways).
    """
    rows = int(os.environ.get("QRITA_CHUNK_ROWS", "0") or 0)
    return batch if rows <= 0 else min(rows, batch)


ONE_LAUNCH_MAX_BATCH = 16  # batches up to this size may take the one-launch kernels
SMALL_BATCH_ROWS = 8  # batches up to this size take ``candsmall``'s pass A (top-k alone)


def one_launch(batch: int, x: torch.Tensor) -> bool:
    """Whether a small-batch call takes a one-launch kernel (:mod:`.one_launch`): a batch of at
    most 16 rows, on a GPU and not while a CUDA graph is being captured (nor in the warm-up
    before one of :mod:`.eager_graph`'s captures, which must run what the capture records).
    ``QRITA_ONE_LAUNCH``: ``auto`` (the default), ``1`` always (the interpreter included), ``0``
    never; a suffix
    ``:N`` moves the batch limit (a measuring knob: ``1:64``). The callers add their own
    conditions (top-k alone, out of place, no ``stats``).

    Eager calls at B <= 16 are bound by the host's launches, so one launch is faster (H200: 75-105
    vs 122-140 µs for masks, BENCHMARKS.md fifth section); a graph replay has no launch cost and
    the pipeline's kernels are faster on the device (32-56 vs 38-104 µs), so a capture takes
    those. Both give the same answer (top-k's does not depend on the path).
    """
    choice, _, limit = os.environ.get("QRITA_ONE_LAUNCH", "auto").partition(":")
    if choice == "0" or batch > (int(limit) if limit else ONE_LAUNCH_MAX_BATCH):
        return False
    if choice == "auto":
        return x.is_cuda and not eager_graph.capturing(x.device)
    return choice == "1"


@functools.lru_cache(maxsize=1024)
def one_launch_words(batch: int, cfg: PipelineConfig) -> int:
    """int32 words of the one-launch kernels' scratch (``one_launch.scratch``)."""
    return max(batch, COUNTER_WORDS.value) + batch * (2 * cfg.cap + 14 * cfg.nseg + 22)


_KEPT_SCRATCH: dict = {}  # (device index, raw stream) -> the one-launch scratch kept between calls
_KEPT_VIEWS: dict = {}  # (device index, raw stream, words) -> its first ``words`` words
_KEPT_HIST: dict = {}  # the same for the hist band's counters (``hist_band_scratch``)
_KEPT_HIST_VIEWS: dict = {}


def _raw_stream(index: int) -> int:
    """The current CUDA stream of device ``index`` as an integer handle: the call Triton's own
    launches make (``driver.active.get_current_stream``), not ``torch.cuda.current_stream``,
    which builds a Stream object (~5 µs of host time per call)."""
    return triton.runtime.driver.active.get_current_stream(index)


def one_launch_scratch(batch: int, cfg: PipelineConfig, device: torch.device) -> torch.Tensor:
    """The one-launch kernels' int32 scratch, its arrival counters zero.

    ``QRITA_ONE_LAUNCH_SCRATCH=keep`` (the default): one buffer per (device, stream) is kept
    between calls and grown when a call needs more, instead of a new zeroed buffer per call
    (``zero``), which costs a ``torch.zeros`` (host time and a memset launch). H200, in one
    process, eager µs at V = 131072 (BENCHMARKS.md twenty-fifth session): topk50 mask B = 1
    36.0 kept vs 79.0 zeroed, ``top_k`` k50 B = 1 55.6 vs 91.1, B = 8 82.8 / 102.6 vs 99.4 /
    127.0. A kept call's host work is a few dictionary lookups: the
    stream is the raw handle and each size's view of the buffer is kept too. (Its first form,
    which built a Stream object and sliced the buffer every call, cost as much host time as the
    zeroing: ``one_launch_scratch`` 20 µs per call under cProfile; BENCHMARKS.md twenty-fourth
    session.) It needs no zeroing after its first: the kernels read no word they have not
    written except the counters, which each row's last program sets back to zero, and calls on
    one stream run in order. Batches above ``COUNTER_WORDS`` rows (whose counters' place depends
    on B) and calls made while a CUDA graph is captured (a graph may be replayed on any stream,
    concurrently with other work: it owns its scratch) or warmed up for one
    (``eager_graph.capturing``) always take a new zeroed buffer.
    """
    words = one_launch_words(batch, cfg)
    if (batch > COUNTER_WORDS.value
            or os.environ.get("QRITA_ONE_LAUNCH_SCRATCH", "keep") != "keep"
            or eager_graph.capturing(device)):
        piece = arena.take(words, zero=True)
        return torch.zeros(words, dtype=torch.int32, device=device) if piece is None else piece
    return _kept_buffer(_KEPT_SCRATCH, _KEPT_VIEWS, words, device)


def _kept_buffer(store: dict, views: dict, words: int, device: torch.device) -> torch.Tensor:
    """The first ``words`` int32 words of the buffer ``store`` keeps for the current (device,
    stream), grown (a new zeroed buffer) when a call needs more; each size's view is kept in
    ``views`` too, so a call's host work is a dictionary lookup."""
    place = (device.index, _raw_stream(device.index)) if device.type == "cuda" else (None, None)
    view = views.get((*place, words))
    if view is not None:
        return view
    kept = store.get(place)
    if kept is None or kept.numel() < words:
        for key in [key for key in views if key[:2] == place]:
            del views[key]  # views of the buffer this one replaces
        kept = store[place] = torch.zeros(words, dtype=torch.int32, device=device)
    view = views[(*place, words)] = kept[:words]
    return view


def hist_band_scratch(words: int, device: torch.device) -> torch.Tensor:
    """The one-launch hist band's counters (int32, ``words`` of them), all zero.

    Kept between calls as the one-launch scratch is (``QRITA_ONE_LAUNCH_SCRATCH=keep``, the
    default; ``zero``: a new zeroed buffer per call): every call leaves them all zero (each wide
    row's last program zeroes its row's counters and arrival counter; other rows' are never
    touched), so they need no fill. Calls made while a CUDA graph is captured take their own
    zeroed buffer."""
    if (os.environ.get("QRITA_ONE_LAUNCH_SCRATCH", "keep") != "keep"
            or eager_graph.capturing(device)):
        piece = arena.take(words, zero=True)
        return torch.zeros(words, dtype=torch.int32, device=device) if piece is None else piece
    return _kept_buffer(_KEPT_HIST, _KEPT_HIST_VIEWS, words, device)


@functools.lru_cache(maxsize=1024)
def _one_plan(cfg: PipelineConfig, k_array: bool | None) -> dict:
    """Constexprs and launch options shared by the one-launch kernels (``K_ARRAY`` unless
    ``k_array`` is None: the selection kernel takes a scalar k)."""
    return dict(SAMPLE=cfg.sample, OVERSAMPLE=cfg.oversample, BLOCK=cfg.block,
                BLOCK_CAND=cfg.block_cand_one or cfg.block_cand or cfg.block, CAP_SEG=cfg.cap_seg,
                NSEG_P2=cfg.nseg_p2, SPARSE=cfg.sparse if cfg.sparse_one < 0 else cfg.sparse_one,
                DENSE=min(cfg.dense, cfg.cap),
                num_warps=cfg.warps_search, **({} if k_array is None else {"K_ARRAY": k_array}))


def _launch_topk_mask_one(x: torch.Tensor, out: torch.Tensor, k, fill: float,
                          cfg: PipelineConfig) -> torch.Tensor:
    """Top-k mask of a small batch in one kernel launch (plus the zeroing of its scratch, unless
    it is kept: :func:`one_launch_scratch`):
    :mod:`qrita.backends.triton.one_launch`."""
    batch, vocab = x.shape
    cfg = call_config(cfg, vocab, k, None)
    ws = one_launch_scratch(batch, cfg, x.device)
    k_array = isinstance(k, torch.Tensor)
    k_ptr, k_scalar = (k, 0) if k_array else (ws, int(k))
    site = _site_id(("topk_mask_one", cfg, k_array, *map(_SPEC, (
        x, k_ptr, vocab, x.stride(0), out.stride(0), k_scalar, ws, out))))
    launch_site(site, one_launch_topk_mask_kernel, (batch, cfg.nseg),
                x, k_ptr, vocab, x.stride(0), out.stride(0), cfg.seg_len, k_scalar, float(fill),
                cfg.max_cands, ws, ws.view(torch.float32), out, **_one_plan(cfg, k_array))
    return out


def launch_select_one(x: torch.Tensor, k: int, *, smallest: bool, sorted: bool,
                      config: PipelineConfig | None = None):
    """:func:`launch_select` of a small batch in one launch (plus the zeroing of its scratch, unless it is kept);
    ``sorted`` orders each row by rank inside the kernel (k <= SORT_MAX), else index order.

    Returns values (B, k) of x's dtype and indices (B, k) int64.
    """
    batch, vocab = x.shape
    if sorted and k > SORT_MAX:
        raise ValueError(f"k={k} exceeds the in-kernel sort's {SORT_MAX}")
    cfg = call_config(config or pipeline_config(vocab, x.dtype), vocab, k, None)
    sel_val = torch.empty((batch, k), dtype=x.dtype, device=x.device)
    sel_idx = torch.empty((batch, k), dtype=torch.int64, device=x.device)
    ws = one_launch_scratch(batch, cfg, x.device)
    k_p2 = max(16, next_pow2(k)) if sorted else 16
    site = _site_id(("select_one", cfg, smallest, sorted, k_p2, *map(_SPEC, (
        x, vocab, x.stride(0), k, ws, sel_val, sel_idx))))
    launch_site(site, one_launch_select_kernel, (batch, cfg.nseg),
                x, vocab, x.stride(0), cfg.seg_len, k, cfg.max_cands, ws, ws.view(torch.float32),
                sel_val, sel_idx, SMALLEST=smallest, SORTED=sorted, K_P2=k_p2,
                **_one_plan(cfg, None))
    return sel_val, sel_idx


def _f64_param(v, fallback: torch.Tensor) -> tuple[torch.Tensor, int, bool]:
    """(pointer, scalar bits, is an array) of a per-row float parameter for the fused sampler: a
    (B,) tensor, or a Python number as the int64 bit pattern of its float64 value (exact)."""
    if isinstance(v, torch.Tensor):
        return v, 0, True
    return fallback, _f64_bits(1.0 if v is None else v), False


def launch_fused_sample(x: torch.Tensor, k: int, u: torch.Tensor, temperature, p, min_p, *,
                        config: PipelineConfig | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """One token per row: top-k with 1 <= k <= SORT_MAX and k < V, then top-p / min-p over the
    survivors, drawn with ``u``. A small batch (:func:`one_launch`) takes one launch
    (``fused_sample.fused_topk_sample_kernel``); a larger one the pipeline's selection
    (:func:`launch_select`) and one draw launch (``fused_sample.selection_sample_kernel``).

    x : (B, V) float32 / bfloat16 / float16, unit stride along V; u : (B,) float32 uniforms;
    temperature : None or a Python number in [1e-30, 1e30] (the caller checks: see the kernel's
    module docstring), or a (B,) tensor; p / min_p : None, Python numbers or (B,) tensors.

    Returns tokens (B,) int64 and their log-probabilities (B,) float32.
    """
    batch, vocab = x.shape
    if not (1 <= k <= SORT_MAX and k < vocab):
        raise ValueError(f"the fused sampler needs 1 <= k <= {SORT_MAX} and k < V, got k={k}")
    cfg = config or pipeline_config(vocab, x.dtype)
    token = torch.empty(batch, dtype=torch.int64, device=x.device)
    logp = torch.empty(batch, dtype=torch.float32, device=x.device)
    t_ptr, t_bits, t_array = _f64_param(temperature, u)
    p_ptr, p_bits, p_array = _f64_param(p, u)
    m_ptr, m_bits, m_array = _f64_param(min_p, u)
    params = dict(T_ARRAY=t_array, HAS_P=p is not None, P_ARRAY=p_array,
                  HAS_MIN_P=min_p is not None, MIN_P_ARRAY=m_array, K_P2=max(16, next_pow2(k)))
    # the draw's specialization, named once (fastlaunch.launch_site)
    draw = (*params.values(), *map(_SPEC, (x, t_ptr, p_ptr, m_ptr, u, x.stride(0), k)),
            *map(_TYPE, (t_bits, p_bits, m_bits)), *map(_SPEC, (token, logp)))
    if not one_launch(batch, x):
        sel_val, sel_idx = launch_select(x, k, smallest=False, config=cfg)
        launch_site(_site_id(("selection_sample", *draw, *map(_SPEC, (sel_val, sel_idx)))),
                    selection_sample_kernel, (batch,),
                    x, t_ptr, p_ptr, m_ptr, u, x.stride(0), k, t_bits, p_bits, m_bits,
                    sel_val, sel_idx, token, logp, **params, num_warps=4 if k <= 256 else 8)
        return token, logp
    sel_val = torch.empty((batch, k), dtype=x.dtype, device=x.device)
    sel_idx = torch.empty((batch, k), dtype=torch.int64, device=x.device)
    ws = one_launch_scratch(batch, cfg, x.device)
    launch_site(_site_id(("fused_topk_sample", cfg, *draw, *map(_SPEC, (vocab, ws, sel_val,
                                                                       sel_idx)))),
                fused_topk_sample_kernel, (batch, cfg.nseg),
                x, t_ptr, p_ptr, m_ptr, u, vocab, x.stride(0), cfg.seg_len, k, cfg.max_cands,
                t_bits, p_bits, m_bits, ws, ws.view(torch.float32), sel_val, sel_idx, token, logp,
                **params, **_one_plan(cfg, None))
    return token, logp


FUSED_TOPP_CAP = 1024  # entries a search gathers and sorts in registers (B x 16 KiB of scratch)
FUSED_TOPP_TABLE = 8  # rounds of the top-p search whose pivots the draw's search starts from


def _f64_bits(v: float) -> int:
    return struct.unpack("<q", struct.pack("<d", float(v)))[0]


def launch_fused_topp_sample(x: torch.Tensor, u: torch.Tensor, temperature, p, *,
                             logprob: bool, rounds: torch.Tensor | None = None,
                             cap: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """One token per row with top-k off: top-p (or nothing) at a scalar temperature, drawn with
    ``u``, in one launch (``fused_topp.fused_topp_sample_kernel``, one program per row).

    x : (B, V) float32 / bfloat16 / float16, unit stride along V; u : (B,) float32 uniforms;
    temperature : None or a Python number in [1e-30, 1e30] (the caller checks); p : None, a
    Python number or a (B,) floating tensor; logprob : also compute the log-probabilities (one
    more read of each row); rounds : optional (B, 2) int32 receiving, per row, the searches the
    histogram band answered and the reads the pivot-round searches took; cap : the gather
    capacity per search (tests), default FUSED_TOPP_CAP (64 under the interpreter).
    Measuring knobs: ``QRITA_TOPP_HIST`` (1: the histogram band first, default; 0: pivot rounds
    only), ``QRITA_TOPP_BINS`` / ``QRITA_TOPP_FINE`` (coarse / fine histogram bins, powers of
    2, default 64 / 128), ``QRITA_TOPP_HBLOCK`` (entries per histogram tile, default 4096),
    ``QRITA_TOPP_PHASES`` (the kernel's ablation), ``QRITA_TOPP_SPLIT`` (1: the pivot rounds
    in a second launch, default; 0: in the band's launch), ``QRITA_TOPP_HMASK`` (1: masked
    histograms, an unmeasured experiment), ``QRITA_TOPP_PIVOTS``
    (pivots per round, a power of 2 >= 4, default 4), ``QRITA_TOPP_BLOCK`` (entries per tile,
    default 1024), ``QRITA_TOPP_WARPS`` (default 8).

    Returns tokens (B,) int64 and log-probabilities (B,) float32 (uninitialised unless
    ``logprob``).
    """
    batch, vocab = x.shape
    small = interpreting()
    cap = cap or (64 if small else FUSED_TOPP_CAP)
    pivots = int(os.environ.get("QRITA_TOPP_PIVOTS", "4"))
    block = 128 if small else int(os.environ.get("QRITA_TOPP_BLOCK", "1024"))
    t = 1.0 if temperature is None else float(temperature)
    dev = x.device
    token = torch.empty(batch, dtype=torch.int64, device=dev)
    logp = torch.empty(batch, dtype=torch.float32, device=dev)
    if rounds is None:
        rounds = torch.empty((batch, 2), dtype=torch.int32, device=dev)
    counter = torch.empty((batch, 2), dtype=torch.int32, device=dev)
    cand_val = torch.empty((batch, 2 * cap), dtype=torch.float32, device=dev)
    cand_idx = torch.empty((batch, 2 * cap), dtype=torch.int32, device=dev)
    bins = 16 if small else int(os.environ.get("QRITA_TOPP_BINS", "64"))
    fine = 32 if small else int(os.environ.get("QRITA_TOPP_FINE", "128"))
    table = (batch, FUSED_TOPP_TABLE * pivots)
    table_piv = torch.empty(table, dtype=torch.int64, device=dev)
    table_cnt = torch.empty(table, dtype=torch.int32, device=dev)
    table_mass = torch.empty(table, dtype=torch.float64, device=dev)
    p_ptr, p_bits, p_array = _f64_param(p, u)
    done = torch.empty(batch, dtype=torch.int32, device=dev)
    hist = os.environ.get("QRITA_TOPP_HIST", "1") == "1"
    split = hist and os.environ.get("QRITA_TOPP_SPLIT", "1") == "1"
    common = dict(HAS_P=p is not None, P_ARRAY=p_array, LOGPROB=logprob, NP=pivots, CAP=cap,
                  BLOCK=block, FOLD=4 if small else 8, MAX_ROUNDS=24,
                  TABLE_ROUNDS=FUSED_TOPP_TABLE, NB1=bins, NB2=fine, SMALL=min(cap, 256),
                  HBLOCK=512 if small else int(os.environ.get("QRITA_TOPP_HBLOCK", "4096")),
                  STEPS=(fine + 1).bit_length(),
                  PHASES=int(os.environ.get("QRITA_TOPP_PHASES", "9")),
                  HMASK=os.environ.get("QRITA_TOPP_HMASK", "0") == "1",
                  num_warps=int(os.environ.get("QRITA_TOPP_WARPS", "8")))
    args = (x, p_ptr, u, vocab, x.stride(0), 1.0 / t, _f64_bits(t), p_bits, counter, cand_val,
            cand_idx, table_piv, table_cnt, table_mass, token, logp, rounds, done)
    # the histogram band (no pivot-round code: fewer registers), then the pivot rounds for the
    # rows it left (the others return at once); QRITA_TOPP_SPLIT=0: one launch with both
    launch(fused_topp_sample_kernel, (batch,), *args, HIST=hist, ROUNDS=not split,
           SKIP_DONE=False, **common)
    if split:
        launch(fused_topp_sample_kernel, (batch,), *args, HIST=False, ROUNDS=True,
               SKIP_DONE=True, **common)
    return token, logp


@functools.cache
def _reject_knob(name: str, default: int) -> int:
    """A measuring knob of the rejection draw (``QRITA_REJECT_*``), read once per process."""
    return int(os.environ.get(name, str(default)))


def _reject_split(split: bool | None) -> bool:
    """Whether the rejection draw splits rows over programs: ``split`` when given, else yes
    unless ``QRITA_REJECT_SPLIT=0`` (a measuring knob: one program per row, whose group sums
    differ from the split's, so tokens near a margin may differ). The split serves every batch
    size so that a row's token never depends on the batch (BENCHMARKS.md, sixteenth session)."""
    if split is not None:
        return split
    return _reject_knob("QRITA_REJECT_SPLIT", 1) != 0


def launch_reject_topp_sample(x: torch.Tensor, temperature, p, seed, offset, min_p=None, *,
                              rounds: torch.Tensor | None = None, block: int | None = None,
                              group: int | None = None, split: bool | None = None,
                              checks: int | None = None,
                              groups_per_program: int | None = None,
                              ahead: int | None = None,
                              row_axis: int | None = None,
                              bound: int | None = None,
                              check_groups_per_program: int | None = None) -> torch.Tensor:
    """One token per row with top-k off: top-p then min-p (either or both may be off), by the
    rejection draw: ``reject_split``'s kernels, each row's groups of tiles over programs (or,
    forced, ``reject_topp.reject_topp_sample_kernel``, one program per row).

    x : (B, V) float32 / bfloat16 / float16, unit stride along V; temperature : None, a Python
    number in [1e-30, 1e30], or a (B,) floating tensor whose values are in [1e-30, 1e30] or not
    > 0 (greedy rows); the caller clamps (docs/sampling.md item 1); p, min_p : None, a Python
    number or a (B,) floating tensor; seed / offset : as
    :func:`qrita.backends.triton.philox.uniforms` takes them (the round uniforms are drawn in the
    kernel); rounds : optional (B,) int32 receiving the draws per row; block : entries per tile
    (default ``QRITA_REJECT_BLOCK`` or 2048, split: ``QRITA_REJECT_SPLIT_BLOCK`` or 1024; 128 /
    32 under the interpreter); group : tiles per group, a power of two (``QRITA_REJECT_GROUP`` or
    8, split: ``QRITA_REJECT_SPLIT_GROUP`` or 4; 2 under the interpreter; it sets the split's
    float32 sums, so it is the same at every batch size);
    split : force the split path on / off (default :func:`_reject_split`); checks : the split
    path's check launches, >= 1 (``QRITA_REJECT_CHECKS`` or 3; the last one finishes the rows
    still rejecting, in one program each: a latency tail, so a third launch pays);
    groups_per_program : the split path's groups per program (default
    :func:`_groups_per_program`; the token does not depend on it);
    check_groups_per_program : the same for the check launches alone (default: as the
    statistics launch, or from ``QRITA_REJECT_CHECK_PROGRAMS`` when that is set); ahead :
    the split path's tiles loaded ahead of use, 1 or 2 (``QRITA_REJECT_SPLIT_AHEAD`` or 1;
    speed only); row_axis : the split grid's axis of the rows, 0 (grid (B, P)) or 1 (grid
    (P, B), B <= 65535; ``QRITA_REJECT_SPLIT_ROWS_LAST=1``; default 0; speed only). The split
    keeps round 0's entry without a check read where the group statistics bound the mass
    before it under p x Z (``bound``: 0 never, 1 from the group masses, 2 (default) also from
    each group's mass within 4 nats of its max; ``QRITA_REJECT_BOUND``; speed only). Warps:
    ``QRITA_REJECT_WARPS`` (default 8), split ``QRITA_REJECT_SPLIT_WARPS`` (default 4; with the
    tile and the group it sets the float32 sums, so it too is the same at every batch size).

    Returns tokens (B,) int64.
    """
    batch, vocab = x.shape
    plan = _reject_plan(batch, vocab, _reject_split(split), block, group, checks,
                        groups_per_program, ahead, row_axis, bound, check_groups_per_program)
    dev = x.device
    t_array = isinstance(temperature, torch.Tensor)
    t = 1.0 if temperature is None or t_array else float(temperature)
    token = torch.empty(batch, dtype=torch.int64, device=dev)
    if rounds is None:
        rounds = torch.empty(batch, dtype=torch.int32, device=dev)
    a = philox.seed_offset_args(seed, offset, batch, dev, token)
    p_ptr, p_bits, p_array = _f64_param(p, token)
    m_ptr, m_bits, m_array = _f64_param(min_p, token)
    inv_t = token  # unread unless TEMP_ARRAY
    if t_array:
        t64 = temperature.to(torch.float64).reshape(-1).expand(batch)
        inv_t = torch.where(t64 > 0, 1.0 / t64, torch.zeros_like(t64)).to(torch.float32)
    head = (x, p_ptr, m_ptr, a.seeds, a.offsets, inv_t, vocab, x.stride(0), 1.0 / t, p_bits,
            m_bits, a.seed_bits, a.offset_bits, a.seed_stride, a.offset_stride)
    flags = dict(HAS_P=p is not None, P_ARRAY=p_array, HAS_MIN_P=min_p is not None,
                 MIN_P_ARRAY=m_array, SEED_MODE=a.seed_mode, OFFSET_ARRAY=a.offset_array,
                 TEMP_ARRAY=t_array, BLOCK=plan.block, GROUP=plan.group, NS_P2=plan.ns)
    if plan.checks == 0:  # one program per row
        launch(reject_topp_sample_kernel, (batch,), *head, token, rounds, **flags,
               num_warps=plan.warps)
        return token
    # one zeroed int32 buffer (one allocation, one fill), carved in the kernels
    # (``reject_split._scratch``): the per-row parts, then the counters of the launches
    ws_i = torch.zeros(plan.words, dtype=torch.int32, device=dev)
    ws_f = ws_i.view(torch.float32)
    per_program, ahead, warps, axis = plan.per_program, plan.ahead, plan.warps, plan.row_axis
    # the launches' specialization, named once for all of them (fastlaunch.launch_site): the
    # plan and flags give the constexprs and options, the tokens the runtime arguments'
    # (the plan's grid and scratch size are left out: one site for every batch size)
    site = _site_id((*flags.values(), plan.checks, ahead, warps, axis, plan.bound,
                     _SPEC(per_program), _SPEC(plan.check_per_program), *map(_SPEC, head[:9]),
                     *map(_TYPE, head[9:13]), *map(_SPEC, head[13:]),
                     *map(_SPEC, (ws_i, token, rounds))))
    launch_site((site, 0), reject_split_stats_kernel, plan.grid, *head, per_program, ws_i, ws_f,
                token, rounds, **flags, AHEAD=ahead, ROW_AXIS=axis, BOUND=plan.bound > 0,
                NEAR=4.0 if plan.bound == 2 else 0.0, num_warps=warps)
    for phase in range(1, plan.checks + 1):
        launch_site((site, phase), reject_split_check_kernel, plan.check_grid, *head,
                    plan.check_per_program, phase, ws_i, ws_f, token, rounds, **flags,
                    FINISH=phase == plan.checks, AHEAD=ahead, ROW_AXIS=axis, num_warps=warps)
    return token




class _RejectPlan(NamedTuple):
    """Launch parameters of the rejection draw for one (B, V) and set of knobs."""

    block: int  # entries per tile
    group: int  # tiles per group (the unit of the per-row masses)
    ns: int  # groups per row, rounded up to a power of two
    checks: int  # check launches of the split (0: one program per row)
    per_program: int  # groups per program of the split
    grid: tuple[int, int]  # (B, programs per row) of the split, or swapped (row_axis 1)
    words: int  # int32 words of the split's zeroed scratch
    ahead: int  # tiles loaded ahead of use
    warps: int
    row_axis: int  # the split grid's axis of the rows
    bound: int  # keep round 0's entry on the group statistics' bound: 0 never, 1 the group
    # masses, 2 also each group's mass within 4 nats of its max
    check_per_program: int  # groups per program of the check launches
    check_grid: tuple[int, int]  # their grid


@functools.lru_cache(maxsize=64)
def _reject_plan(batch: int, vocab: int, split: bool, block: int | None, group: int | None,
                 checks: int | None, groups_per_program: int | None,
                 ahead: int | None, row_axis: int | None, bound: int | None,
                 check_groups_per_program: int | None) -> _RejectPlan:
    """:func:`launch_reject_topp_sample`'s launch parameters (its arguments' defaults filled in
    from the knobs; cached, so a call's host work is the launches)."""
    small = interpreting()
    if split:
        block = block or (32 if small else _reject_knob("QRITA_REJECT_SPLIT_BLOCK", 1024))
        group = group or (2 if small else _reject_knob("QRITA_REJECT_SPLIT_GROUP", 4))
    else:
        block = block or (128 if small else _reject_knob("QRITA_REJECT_BLOCK", 2048))
        group = group or (2 if small else _reject_knob("QRITA_REJECT_GROUP", 8))
    block = min(block, next_pow2(vocab))
    group = min(group, next_pow2(-(-vocab // block)))
    nseg = -(-vocab // (block * group))
    ns = next_pow2(nseg)
    if not split:
        return _RejectPlan(block, group, ns, 0, 1, (batch, 1), 0, 1,
                           _reject_knob("QRITA_REJECT_WARPS", 8), 0, 0, 1, (batch, 1))
    checks = max(1, _reject_knob("QRITA_REJECT_CHECKS", 3) if checks is None else checks)
    per_program = _groups_per_program(batch, nseg, groups_per_program)
    ahead = ahead or _reject_knob("QRITA_REJECT_SPLIT_AHEAD", 1)
    if ahead not in (1, 2):
        raise ValueError(f"ahead must be 1 or 2, got {ahead}")
    programs = -(-nseg // per_program)
    # the check launches read only the rows still undecided: their own program target
    # (``QRITA_REJECT_CHECK_PROGRAMS``, default: the statistics' own)
    check_target = _reject_knob("QRITA_REJECT_CHECK_PROGRAMS", 0)
    if check_groups_per_program is not None:
        check_per_program = max(1, min(check_groups_per_program, nseg))
    elif check_target > 0:
        check_per_program = _groups_per_program(batch, nseg, groups_per_program, check_target)
    else:
        check_per_program = per_program
    check_programs = -(-nseg // check_per_program)
    # QRITA_REJECT_SPLIT_ROWS_LAST=1 (measuring): grid (P, B), a row's programs adjacent in launch
    # order; only while B fits the grid's second axis (65535)
    if row_axis is None:
        row_axis = int(_reject_knob("QRITA_REJECT_SPLIT_ROWS_LAST", 0) == 1 and batch <= 65535)
    if row_axis not in (0, 1) or (row_axis == 1 and batch > 65535):
        raise ValueError(f"row_axis must be 0, or 1 with B <= 65535; got {row_axis} (B={batch})")
    return _RejectPlan(block, group, ns, checks, per_program,
                       (programs, batch) if row_axis else (batch, programs),
                       batch * (5 * ns + 6 + checks + 1), ahead,
                       _reject_knob("QRITA_REJECT_SPLIT_WARPS", 4), row_axis,
                       _reject_knob("QRITA_REJECT_BOUND", 2) if bound is None else int(bound),
                       check_per_program,
                       (check_programs, batch) if row_axis else (batch, check_programs))


def _groups_per_program(batch: int, groups: int, given: int | None,
                        target: int | None = None) -> int:
    """Groups of the split rejection draw per program: ``given``, or ``QRITA_REJECT_SPLIT_GPP``
    when set (> 0), else as few as keep B x programs-per-row near ``target`` programs per launch
    (default ``QRITA_REJECT_SPLIT_PROGRAMS`` or 8192). Only the speed depends on it (the
    kernels do not specialize on it: a group's sums are the same machine code's whichever
    program takes it)."""
    if given is None:
        given = _reject_knob("QRITA_REJECT_SPLIT_GPP", 0)
    if given <= 0:
        if target is None:
            target = _reject_knob("QRITA_REJECT_SPLIT_PROGRAMS", 8192)
        programs = max(1, min(groups, target // batch))
        given = -(-groups // programs)
    return max(1, min(given, groups))


def launch_mask(x: torch.Tensor, out: torch.Tensor, k, p, fill: float, *,
                row_info: torch.Tensor | None = None,
                config: PipelineConfig | None = None) -> torch.Tensor:
    """Top-k then top-p mask of (B, V) rows with unit stride along V into ``out`` (may be ``x``).

    k / p : None, Python scalars or (B,) tensors on x's device. ``row_info`` : optional (B, 8)
    int32 tensor receiving per row mode (0 keep all, 1 candidates, 2 fallback), boundary key,
    tie budget, candidates and pivot rounds.
    """
    batch, vocab = x.shape
    cfg = config or pipeline_config(vocab, x.dtype)
    if (p is None and k is not None and row_info is None and out.data_ptr() != x.data_ptr()
            and one_launch(batch, x)):
        return _launch_topk_mask_one(x, out, k, fill, cfg)
    cfg = call_config(cfg, vocab, k, p, batch)
    cand_val, cand_idx, seg_i, seg_before, row_info, site = _search(
        x, k, p, cfg, smallest=False, select=False, out=out, sel_val=None, sel_idx=None,
        fill=fill, row_info=row_info)
    launch_site((site, "write_mask"), write_mask_kernel, (batch, cfg.nseg),
        x, cand_val, cand_idx, seg_i, row_info, seg_before,
        vocab, x.stride(0), out.stride(0), cfg.seg_len, float(fill), out,
        INPLACE=out.data_ptr() == x.data_ptr(), BLOCK=cfg.block_write or cfg.block,
        CAP_SEG=cfg.cap_seg, NSEG_P2=cfg.nseg_p2, CUT=cfg.write_cut,
        num_warps=cfg.warps_write or cfg.warps_stream,
    )
    return out


def _selection_words(batch: int, k: int, dtype: torch.dtype, with_key: bool) -> list[int]:
    """Int32 words of a selection's values, int64 indices and (``with_key``) int32 rank keys."""
    value_words = -(-batch * k * dtype.itemsize // 4)
    return [value_words, 2 * batch * k] + ([batch * k] if with_key else [])


def _selection_buffers(batch: int, k: int, dtype: torch.dtype, device: torch.device,
                       with_key: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """A selection's values (B, k) of ``dtype``, indices (B, k) int64 and, with ``with_key``,
    int32 rank keys (B, k) (else None): new tensors, or inside :func:`arena.scratch_arena`
    pieces of the caller's buffer (a recorded graph's replays then write where the caller
    reads)."""
    if not arena.active():
        key = torch.empty((batch, k), dtype=torch.int32, device=device) if with_key else None
        return (torch.empty((batch, k), dtype=dtype, device=device),
                torch.empty((batch, k), dtype=torch.int64, device=device), key)
    pieces = [arena.take(words) for words in _selection_words(batch, k, dtype, with_key)]
    values = pieces[0].view(dtype)[:batch * k].view(batch, k)
    indices = pieces[1].view(torch.int64).view(batch, k)
    return values, indices, pieces[2].view(batch, k) if with_key else None


def select_scratch_words(batch: int, vocab: int, dtype: torch.dtype, k: int) -> int:
    """Int32 words of scratch that :func:`launch_select` or :func:`launch_select_fused` of
    (``batch``, ``vocab``) rows and a scalar ``k`` takes inside :func:`arena.scratch_arena`,
    the selection itself included, then sorted in place (an upper bound: the rank keys
    counted too). A sorted selection above ``SORT_MAX`` (a torch sort, whose scratch is
    torch's) and ``QRITA_CHUNK_ROWS`` chunks (joined by ``torch.cat``) take more than the
    arena: callers keep those out of one."""
    if batch == 0 or vocab == 0 or k == 0:
        return 0
    cfg = call_config(pipeline_config(vocab, dtype), vocab, k, None)
    words = batch * sum(_workspace_widths(cfg, False, False)) + arena.ALIGN_WORDS
    return words + sum(w + arena.ALIGN_WORDS for w in _selection_words(batch, k, dtype, True))


def launch_select(x: torch.Tensor, k: int, *, smallest: bool, with_key: bool = False,
                  row_info: torch.Tensor | None = None,
                  config: PipelineConfig | None = None):
    """The first k entries of each row's order (1 <= k <= V), in index order.

    Returns values (B, k) of x's dtype and indices (B, k) int64; with ``with_key`` also their
    int32 rank keys (B, k) (larger = earlier in the order, NaN last: docs/algorithm.md §0).
    """
    batch, vocab = x.shape
    cfg = config or pipeline_config(vocab, x.dtype)
    sel_val, sel_idx, sel_key = _selection_buffers(batch, k, x.dtype, x.device, with_key)
    sel_key = sel_key if with_key else sel_idx
    cfg = call_config(cfg, vocab, k, None)
    cand_val, cand_idx, seg_i, seg_before, row_info, site = _search(
        x, k, None, cfg, smallest=smallest, select=True, out=None, sel_val=sel_val,
        sel_idx=sel_idx, fill=0.0, row_info=row_info)
    launch_site((site, "write_select", with_key, _SPEC(sel_key)), write_select_kernel,
        (batch, cfg.nseg),
        x, cand_val, cand_idx, seg_i, row_info, seg_before,
        vocab, x.stride(0), cfg.seg_len, k, sel_val, sel_idx, sel_key,
        BLOCK=cfg.block_select or cfg.block, CAP_SEG=cfg.cap_seg, NSEG_P2=cfg.nseg_p2,
        SMALLEST=smallest, WITH_KEY=with_key, num_warps=cfg.warps_stream,
    )
    return (sel_val, sel_idx, sel_key) if with_key else (sel_val, sel_idx)


def fused_select_applies(cfg: PipelineConfig, vocab: int, k: int, sorted: bool,
                         batch: int) -> bool:
    """Whether ``top_k`` of scalar ``k`` over ``batch`` rows takes :func:`launch_select_fused`:
    the launch table's ``selfuse`` (from ``fused_select_rows`` rows), no top-k retry (k below
    ``retry_min_k``), the search in one launch, and a sorted selection that fits the
    in-register sort (k <= SORT_MAX)."""
    return (cfg.fused_select and batch >= cfg.fused_select_rows
            and 0 < k <= vocab and k < cfg.retry_min_k
            and threshold_stages(True, False) == (0,) and (not sorted or k <= SORT_MAX))


def launch_select_fused(x: torch.Tensor, k: int, *, smallest: bool, sorted: bool,
                        config: PipelineConfig | None = None):
    """:func:`launch_select` (then, when ``sorted``, the selection sorted by rank) with the
    per-row search writing the selection itself (``threshold_select_kernel``): three launches
    after pass A become one. Only where :func:`fused_select_applies`.

    Returns values (B, k) of x's dtype and indices (B, k) int64, by rank when ``sorted``, else
    in index order.
    """
    batch, vocab = x.shape
    cfg = call_config(config or pipeline_config(vocab, x.dtype), vocab, k, None)
    sel_val, sel_idx, _ = _selection_buffers(batch, k, x.dtype, x.device, False)
    _search(x, k, None, cfg, smallest=smallest, select=True, out=None, sel_val=sel_val,
            sel_idx=sel_idx, fill=0.0, row_info=None, fused_sort=sorted)
    return sel_val, sel_idx


@functools.lru_cache(maxsize=64)
def _sort_warps(k_p2: int, table: str, batch: int = 0, hip: bool = False) -> int:
    """Warps of the per-row sort of k_p2 slots: 4 up to 256, else 16 (H200, B = 1024, k = 1000:
    82.8 us at 8 warps, 66.3 at 16, 110.5 at 4; BENCHMARKS.md eleventh section).
    ``sortsmall=RxW``: W warps for 1024 slots at batches of at most R rows, on NVIDIA only
    (AMD's blocks hold at most 16 wavefronts). Default 32 warps up to 64 rows (H100, zipf k =
    1000, graph us, sort kernel 16 -> 32 warps: B = 64 fp32 10.3 -> 8.9, bf16 9.8 -> 8.4; B =
    256 21.1 -> 22.4, B = 1024 71.0 -> 80.5, BENCHMARKS.md forty-third session; the whole
    call, oracle-checked: B = 8 fp32 51.2 -> 49.9, bf16 45.4 -> 44.3, B = 64 fp32 80.7 ->
    79.6, bf16 71.7 -> 70.3, forty-fifth session). ``QRITA_LAUNCH_TABLE``: ``sortsmall=0x32``
    turns it off; ``sort=0xW`` (W warps), ``sortbig=0xW`` (above 256 only) override it."""
    warps = 4 if k_p2 <= 256 else 16
    if k_p2 >= 1024 and not hip:
        rows, small_warps = _table_override("sortsmall", (64, 32))
        if 0 < batch <= rows:
            warps = small_warps
    if k_p2 > 256:
        warps = _table_override("sortbig", (0, warps))[1]
    return _table_override("sort", (0, warps))[1]


def sort_selection_rows(x: torch.Tensor, sel_val: torch.Tensor, sel_idx: torch.Tensor,
                        *, smallest: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Reorder :func:`launch_select`'s rows (index order) by rank, in place, one program per row
    sorting in registers (k <= SORT_MAX): one launch instead of a torch sort and two gathers.

    x : (B, V), unit stride along V; sel_val : (B, k) x's dtype; sel_idx : (B, k) int64.
    """
    batch, k = sel_idx.shape
    if k > SORT_MAX:
        raise ValueError(f"k={k} exceeds the in-kernel sort's {SORT_MAX}")
    k_p2 = max(16, next_pow2(k))
    launch(sort_selection_kernel, (batch,), x, x.stride(0), k, sel_val, sel_idx,
           SMALLEST=smallest, K_P2=k_p2,
           num_warps=_sort_warps(k_p2, os.environ.get("QRITA_LAUNCH_TABLE", ""), batch,
                                 torch.version.hip is not None))
    return sel_val, sel_idx
