"""``qrita.backends.triton.eager_graph`` (on unless ``QRITA_EAGER_GRAPHS=0``): eager small-batch mask calls
replayed from graphs qrita captured. On the CPU the graph is a stand-in that re-runs the captured
launches into the same static output (what a CUDA graph's replay does); on the GPU, real graphs.
Every mask is compared in full with the oracle and with the plain path."""

from __future__ import annotations

import numpy as np
import pytest
from _triton_env import DEVICE, ON_GPU, torch

from qrita.backends.triton import eager_graph, ops
from qrita.testing import compare, generators


class _StandInGraph:
    """Replays by running the captured launches on the static inputs again and writing their
    result into the output captured (a CUDA graph rewrites the same output buffer)."""

    def __init__(self, run, static, output):
        self.run, self.static, self.output, self.replays = run, static, output, 0

    def replay(self):
        eager_graph._WARM_UP.on = True  # what a replay re-runs are the captured launches
        try:
            result = self.run(*self.static)
            for out, new in zip(*((r,) if isinstance(r, torch.Tensor) else r
                                  for r in (self.output, result))):
                out.copy_(new)
        finally:
            eager_graph._WARM_UP.on = False
        self.replays += 1


class _StandInCapture:
    captures: list = []

    @classmethod
    def warm_up(cls, run, static, device):
        run(*static)

    @classmethod
    def capture(cls, run, static, device):
        # a capture runs nothing: what the launches write into the static tensors (and tensors
        # taken by address) is put back
        saved = [(t, t.clone()) for t in static if isinstance(t, torch.Tensor)]
        output = run(*static)
        for t, before in saved:
            t.copy_(before)
        graph = _StandInGraph(run, static, output)
        cls.captures.append(graph)
        return graph, output


def _stand_in_usable(x) -> bool:
    return eager_graph.ENABLED and 0 < x.shape[0] <= 8 and not eager_graph.capturing(x.device)


def _stand_in_by_address(x) -> bool:
    return eager_graph.ENABLED and 0 < x.shape[0] <= 256 and not eager_graph.capturing(x.device)


def _plain(monkeypatch, fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` with the eager graphs off: the plain path."""
    monkeypatch.setattr(eager_graph, "ENABLED", False)
    try:
        return fn(*args, **kwargs)
    finally:
        monkeypatch.setattr(eager_graph, "ENABLED", True)


@pytest.fixture
def stand_in(monkeypatch):
    """Graphs on for CPU tensors of at most 8 rows, made by the stand-in."""
    monkeypatch.setattr(eager_graph, "ENABLED", True)
    monkeypatch.setattr(eager_graph, "usable", _stand_in_usable)
    monkeypatch.setattr(eager_graph, "usable_by_address", _stand_in_by_address)
    monkeypatch.setattr(eager_graph, "_CAPTURE", _StandInCapture)
    monkeypatch.setattr(eager_graph, "SAMPLE", True)
    monkeypatch.setattr(eager_graph, "MASK_ADDRESS", True)
    monkeypatch.setattr(_StandInCapture, "captures", [])
    eager_graph.clear()
    yield _StandInCapture.captures
    eager_graph.clear()


def _check(got: torch.Tensor, x: np.ndarray, k, p, fill=float("-inf")) -> None:
    """``got`` is the oracle's mask of the float32 rows ``x`` (full masks, the contract's
    margin for top-p)."""
    assert got.shape == x.shape and got.dtype == torch.float32
    compare.assert_mask_matches(got.cpu().numpy(), x, k, p, fill=fill)


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.int32 if t.element_size() == 4 else torch.int16)


def _rows(rng, batch: int, vocab: int) -> np.ndarray:
    """Zipf and Gaussian rows with ties at the boundary: float32 logits (B, V)."""
    zipf = generators.zipf_logits(batch, vocab, 1.1, rng)
    gauss = generators.gaussian_logits(batch, vocab, 2.0, rng)
    x = np.where(rng.random((batch, 1)) < 0.5, zipf, gauss).astype(np.float32)
    x[:, : vocab // 8] = np.round(x[:, : vocab // 8])  # many copies of a few values
    return x


@pytest.mark.parametrize("in_place", [False, True])
def test_replays_one_graph_per_key_and_copies_out(stand_in, monkeypatch, in_place):
    """A key's first call runs the launches as they are, its second captures them; the same
    shape and scalars then replay one graph with each call's inputs copied in; a new p value,
    per-row tensors, another fill or shape each take their own graph; every call's mask is the
    oracle's, and a returned mask is the caller's (a later call leaves it unchanged). With
    ``IN_PLACE`` the graph masks its static copy of the logits in place; either way the caller's
    logits stay as they were."""
    monkeypatch.setattr(eager_graph, "IN_PLACE", in_place)
    rng = np.random.default_rng(5)
    V = 1001
    xs = [_rows(rng, 2, V) for _ in range(4)]
    results = []
    for i, x in enumerate(xs):
        logits = torch.tensor(x, device=DEVICE)
        got = ops.top_k_top_p_mask(logits, None, 0.9)
        _check(got, x, None, 0.9)
        np.testing.assert_array_equal(logits.cpu().numpy(), x)
        results.append(got)
        assert len(stand_in) == (0 if i == 0 else 1)
    assert stand_in[0].replays == 3
    graph = stand_in[0]
    assert (graph.output is graph.static[0]) == in_place  # one (B, V) buffer: masked in place
    for got, x in zip(results, xs):  # unchanged by the later calls
        _check(got, x, None, 0.9)
    # another p value, per-row k and p tensors (their values copied in), a fill, a shape
    x = xs[0]
    for _ in range(2):
        _check(ops.top_k_top_p_mask(torch.tensor(x, device=DEVICE), None, 0.5), x, None, 0.5)
    assert len(stand_in) == 2
    for k_rows, p_rows in (([3, 700], [0.9, 0.2]), ([1, 1000], [1.0, 0.99]),
                           ([999, 2], [0.3, 1e-7])):
        k_t = torch.tensor(k_rows, dtype=torch.int64, device=DEVICE)
        p_t = torch.tensor(p_rows, dtype=torch.float32, device=DEVICE)
        got = ops.top_k_top_p_mask(torch.tensor(x, device=DEVICE), k_t, p_t)
        _check(got, x, np.array(k_rows), np.array(p_rows, dtype=np.float32))
    assert len(stand_in) == 3 and stand_in[2].replays == 2
    for rows in (x, x[:1]):
        for _ in range(2):
            got = ops.top_k_top_p_mask(torch.tensor(rows, device=DEVICE), 50, None, fill=-7.0)
            _check(got, rows, 50, None, fill=-7.0)
    assert len(stand_in) == 5


def test_keys_seen_once_are_not_captured(stand_in, monkeypatch):
    """Calls whose scalars change every time run as they are: no capture, and the keys seen
    once are bounded."""
    monkeypatch.setattr(eager_graph, "_SEEN_MAX", 3)
    rng = np.random.default_rng(9)
    x = _rows(rng, 1, 300)
    t = torch.tensor(x, device=DEVICE)
    for p in (0.1, 0.2, 0.3, 0.4, 0.5):
        _check(ops.top_k_top_p_mask(t, None, p), x, None, p)
    assert stand_in == [] and len(eager_graph._SEEN) == 3
    _check(ops.top_k_top_p_mask(t, None, 0.1), x, None, 0.1)  # forgotten: seen once again
    assert stand_in == []
    _check(ops.top_k_top_p_mask(t, None, 0.5), x, None, 0.5)  # remembered: captured
    assert len(stand_in) == 1


def test_bypassed_inplace_stats_and_large_batches(stand_in, monkeypatch):
    """Without the graphs by address, ``inplace``, ``stats`` and batches above the limit take
    the plain path (no graph), with the oracle's answer."""
    monkeypatch.setattr(eager_graph, "usable_by_address", lambda x: False)
    rng = np.random.default_rng(6)
    x = _rows(rng, 2, 513)
    t = torch.tensor(x, device=DEVICE)
    ops.top_k_top_p_mask(t, 20, 0.8, inplace=True)
    _check(t, x, 20, 0.8)
    stats = torch.zeros((2, ops.STATS_WIDTH), dtype=torch.int32, device=DEVICE)
    _check(ops.top_k_top_p_mask(torch.tensor(x, device=DEVICE), 20, 0.8, stats=stats), x, 20, 0.8)
    assert (stats[:, 0] > 0).all()
    big = _rows(rng, 9, 513)
    _check(ops.top_k_top_p_mask(torch.tensor(big, device=DEVICE), None, 0.7), big, None, 0.7)
    assert stand_in == []


def test_a_key_whose_capture_fails_runs_as_it_is(stand_in, monkeypatch):
    """A capture that raises leaves that key on the plain path (the oracle's masks), with no
    further attempt; other keys still capture."""
    calls = []

    class Failing(_StandInCapture):
        @classmethod
        def capture(cls, run, static, device):
            calls.append(static)
            if len(calls) == 1:
                raise RuntimeError("operation not permitted when stream is capturing")
            return super().capture(run, static, device)

    monkeypatch.setattr(eager_graph, "_CAPTURE", Failing)
    rng = np.random.default_rng(10)
    x = _rows(rng, 1, 300)
    t = torch.tensor(x, device=DEVICE)
    for _ in range(4):
        _check(ops.top_k_top_p_mask(t, None, 0.4), x, None, 0.4)
    assert len(calls) == 1 and stand_in == []
    # the error is kept for probes (``FAILED_WHY``), with the operation's name
    assert len(eager_graph.FAILED_WHY) == 1
    assert eager_graph.FAILED_WHY[0][0] == "mask"
    assert "operation not permitted" in eager_graph.FAILED_WHY[0][1]
    for _ in range(2):
        _check(ops.top_k_top_p_mask(t, None, 0.6), x, None, 0.6)
    assert len(calls) == 2 and len(stand_in) == 1 and len(eager_graph.FAILED_WHY) == 1


def test_least_recently_used_graph_goes_first(stand_in, monkeypatch):
    monkeypatch.setattr(eager_graph, "MAX_GRAPHS", 2)
    rng = np.random.default_rng(7)
    x = _rows(rng, 1, 300)
    t = torch.tensor(x, device=DEVICE)
    # (each p twice: captured at its second call) 0.6 is the least recently used when 0.9 comes
    for p in (0.3, 0.3, 0.6, 0.6, 0.3, 0.9, 0.9, 0.3):
        _check(ops.top_k_top_p_mask(t, None, p), x, None, p)
    assert len(stand_in) == 3 and len(eager_graph._GRAPHS) == 2
    ops.top_k_top_p_mask(t, None, 0.3)  # kept: replayed
    assert len(stand_in) == 3
    for _ in range(2):
        ops.top_k_top_p_mask(t, None, 0.6)  # dropped: seen once more, then captured again
    assert len(stand_in) == 4 and len(eager_graph._GRAPHS) == 2


def test_a_family_stops_capturing_after_its_budget(stand_in, monkeypatch):
    """Calls cycling through more keys than are kept (here 4 p values, 2 graphs kept) would
    capture on every other call; a family (operation, device, dtype, shape) stops capturing
    after ``CAPTURES_PER_FAMILY`` captures, its kept graphs still replay, other families still
    capture, and every mask is the oracle's."""
    monkeypatch.setattr(eager_graph, "MAX_GRAPHS", 2)
    monkeypatch.setattr(eager_graph, "CAPTURES_PER_FAMILY", 3)
    rng = np.random.default_rng(16)
    x = _rows(rng, 1, 300)
    t = torch.tensor(x, device=DEVICE)
    for _ in range(4):
        for p in (0.2, 0.4, 0.6, 0.8):
            _check(ops.top_k_top_p_mask(t, None, p), x, None, p)
    assert len(stand_in) == 3
    kept = list(eager_graph._GRAPHS.values())
    replays = [g.replays for g in stand_in]
    for p in (0.2, 0.4, 0.6, 0.8):
        _check(ops.top_k_top_p_mask(t, None, p), x, None, p)
    assert len(stand_in) == 3 and len(kept) == 2
    assert sum(g.replays for g in stand_in) == sum(replays) + 2  # the kept two replayed
    x2 = _rows(rng, 2, 300)  # another shape: another family
    for _ in range(2):
        _check(ops.top_k_top_p_mask(torch.tensor(x2, device=DEVICE), None, 0.5), x2, None, 0.5)
    assert len(stand_in) == 4


def test_the_warm_up_takes_the_capture_path(stand_in, monkeypatch):
    """The warm-up before a capture runs as the capture will (``eager_graph.capturing`` true),
    so the launchers pick the capture's kernels and scratch there and compile them before the
    capture: ``launch.one_launch`` says no and ``one_launch_scratch`` hands out a new zeroed
    buffer, not the kept one; the plain first call, the replays and calls outside are eager."""
    from types import SimpleNamespace

    from qrita.backends.triton import launch

    seen = []

    def run(t):
        seen.append(eager_graph.capturing(t.device))
        return t + 1

    t = torch.zeros((1, 5))
    for _ in range(4):
        assert torch.equal(eager_graph.cached_call("probe", run, (t,)), t + 1)
    # first call plain, then the warm-up, the capture and the replays (the stand-in's re-runs)
    assert seen[0] is False and all(seen[1:]) and len(seen) == 6
    assert not eager_graph.capturing(t.device)

    monkeypatch.setenv("QRITA_ONE_LAUNCH", "auto")
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)
    cuda_x = SimpleNamespace(is_cuda=True, device=torch.device("cuda", 0))
    cfg = launch._pipeline_config(4096, torch.float32, True, "")
    monkeypatch.setattr(launch, "_KEPT_SCRATCH", {})
    monkeypatch.setattr(launch, "_KEPT_VIEWS", {})
    cpu = torch.device("cpu")
    assert launch.one_launch(1, cuda_x)
    kept = launch.one_launch_scratch(1, cfg, cpu)
    assert launch.one_launch_scratch(1, cfg, cpu) is kept
    eager_graph._WARM_UP.on = True
    try:
        assert not launch.one_launch(1, cuda_x)
        fresh = launch.one_launch_scratch(1, cfg, cpu)
        assert fresh.data_ptr() != kept.data_ptr() and not fresh.any()
    finally:
        eager_graph._WARM_UP.on = False
    assert launch.one_launch(1, cuda_x)


def test_sampler_replays_with_new_seeds_and_offsets(stand_in, monkeypatch):
    """``sample`` takes the graphs too: its seed and offset go in as values copied into the
    graph's static buffer (one host tensor, pinned on a GPU), so a decode
    loop's new offset (or seed) each call replays one graph; every call's tokens (and
    log-probabilities) equal the plain path's bit for bit: Python int seeds and offsets, per-row
    seed and offset tensors, and seed None, whose per-row seeds the graph path derives on the
    host exactly as the kernels do from the same fresh seed (``philox.fresh_seed`` fixed here)."""
    from qrita.backends.triton import philox, sampling_ops

    rng = np.random.default_rng(12)
    x = torch.tensor(_rows(rng, 3, 300), device=DEVICE)
    k_rows = torch.tensor([5, 0, 300], device=DEVICE)
    cases = [dict(p=0.9), dict(k=20, p=0.8, temperature=0.7), dict(k=k_rows, p=0.95),
             dict(p=0.9, min_p=0.05, return_logprob=True)]
    for kw in cases:
        for step in range(4):  # a decode loop: the offset moves, the seed stays
            want = _plain(monkeypatch, sampling_ops.sample, x, seed=7 + 2**63, offset=step, **kw)
            got = sampling_ops.sample(x, seed=7 + 2**63, offset=step, **kw)
            for g, w in zip(got if isinstance(got, tuple) else (got,),
                            want if isinstance(want, tuple) else (want,)):
                assert torch.equal(g, w), (kw, step)
    assert len(stand_in) == len(cases)
    assert all(graph.replays == 3 for graph in stand_in)
    # per-row tensors; and new seeds per call
    seeds = torch.tensor([1, 2**62, 3], device=DEVICE)
    offsets = torch.tensor([0, 5, 2**40], device=DEVICE)
    for call in range(3):
        want = _plain(monkeypatch, sampling_ops.sample, x, p=0.9, seed=seeds + call, offset=offsets)
        assert torch.equal(sampling_ops.sample(x, p=0.9, seed=seeds + call, offset=offsets),
                           want)
        want = _plain(monkeypatch, sampling_ops.sample, x, p=0.9, seed=call * 1000, offset=None)
        assert torch.equal(sampling_ops.sample(x, p=0.9, seed=call * 1000), want)
    # (the int seeds with offset None replay the first case's graph: ints and None go in as
    # one value each)
    assert len(stand_in) == len(cases) + 1
    # seed None: the kernels' fresh per-row seeds, from one fixed fresh seed
    monkeypatch.setattr(philox, "fresh_seed", lambda: 2**63 - 5)
    want = _plain(monkeypatch, sampling_ops.sample, x, p=0.9)
    for _ in range(3):
        assert torch.equal(sampling_ops.sample(x, p=0.9), want)
    assert len(stand_in) == len(cases) + 2


@pytest.mark.parametrize("rows,sample_address", [(12, False), (3, True)])
def test_sampler_graphs_by_address(stand_in, monkeypatch, rows, sample_address):
    """``sample`` above the static graphs' batches (here 12 rows), or at any batch with
    ``SAMPLE_ADDRESS`` (here 3 rows), reads the logits by address: new values in the same
    tensor and a new offset each call replay one graph, its tokens and log-probabilities equal
    the plain path's bit for bit, and the graph keeps no reference to the logits."""
    from qrita.backends.triton import sampling_ops

    monkeypatch.setattr(eager_graph, "SAMPLE_ADDRESS", sample_address)
    rng = np.random.default_rng(20)
    x = torch.empty((rows, 300), dtype=torch.float32, device=DEVICE)
    for step in range(4):
        x.copy_(torch.tensor(_rows(rng, rows, 300)))
        kw = dict(k=30, p=0.9, temperature=0.9, return_logprob=True)
        want = _plain(monkeypatch, sampling_ops.sample, x, seed=5, offset=step, **kw)
        got = sampling_ops.sample(x, seed=5, offset=step, **kw)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1]), step
    assert len(stand_in) == 1 and stand_in[0].replays == 3
    assert next(iter(eager_graph._GRAPHS.values())).inputs[0] is None


def test_top_k_graphs_read_the_logits_by_address(stand_in):
    """``top_k`` at batches the one-launch kernel does not take (here all: CPU tensors) replays
    graphs that read the logits where they are: the key holds the tensor's address, the graph
    keeps no reference of its own to it, a replay reads what the tensor holds now (new values
    written into it), and another tensor (another address) is a new key. Every result is the
    oracle's, sorted and unsorted, largest and smallest."""
    from qrita.reference import oracle

    rng = np.random.default_rng(14)
    V = 1001
    logits = torch.tensor(_rows(rng, 20, V), device=DEVICE)
    for _ in range(4):
        x = _rows(rng, 20, V)
        logits.copy_(torch.tensor(x))
        values, indices = ops.top_k(logits, 9)
        want = oracle.top_k(x, 9)
        np.testing.assert_array_equal(indices.cpu().numpy(), want.indices)
        np.testing.assert_array_equal(values.cpu().numpy(), want.values)
    assert len(stand_in) == 1 and stand_in[0].replays == 3  # calls 2 (its capture), 3, 4
    entry = next(iter(eager_graph._GRAPHS.values()))
    assert entry.inputs[0] is None  # no reference to the logits
    for smallest, is_sorted in ((True, True), (False, False)):
        for _ in range(2):
            values, indices = ops.top_k(logits, 9, mode="smallest" if smallest else "largest",
                                        sorted=is_sorted)
            want = oracle.top_k(x, 9, mode="smallest" if smallest else "largest",
                                sorted=is_sorted)
            np.testing.assert_array_equal(indices.cpu().numpy(), want.indices)
            np.testing.assert_array_equal(values.cpu().numpy(), want.values)
    assert len(stand_in) == 3
    other = logits.clone()  # the same values at another address: a new key
    ops.top_k(other, 9)
    assert len(stand_in) == 3 and len(eager_graph._SEEN) == 1


@pytest.mark.parametrize("top_k_from", [9, 17])
def test_top_k_takes_its_graph_ahead_of_the_one_launch_kernel(stand_in, monkeypatch,
                                                               top_k_from):
    """From ``TOP_K_FROM`` rows, ``top_k`` takes its graph by address ahead of the one-launch
    kernel: a key's first call runs that kernel, its capture (and the warm-up) the pipeline,
    later calls replay. Below, every call takes the one-launch kernel and nothing is captured.
    Every result is the oracle's."""
    from qrita.reference import oracle

    monkeypatch.setattr(eager_graph, "TOP_K_FROM", top_k_from)
    one_launch_calls = []
    real_select_one = ops.launch_select_one

    def recorded_select_one(src, k, **kwargs):
        one_launch_calls.append(src.shape[0])
        return real_select_one(src, k, **kwargs)

    # the one-launch kernel for batches up to 16 rows, but not while a graph is captured or
    # warmed up (as ``launch.one_launch`` on a GPU)
    monkeypatch.setattr(ops, "one_launch",
                        lambda batch, x: batch <= 16 and not eager_graph.capturing(x.device))
    monkeypatch.setattr(ops, "launch_select_one", recorded_select_one)
    rng = np.random.default_rng(23)
    V = 1001
    for batch, graphed in ((4, False), (12, top_k_from <= 12)):
        before = len(stand_in)
        one_launch_calls.clear()
        logits = torch.tensor(_rows(rng, batch, V), device=DEVICE)
        for _ in range(4):
            x = _rows(rng, batch, V)
            logits.copy_(torch.tensor(x))
            values, indices = ops.top_k(logits, 7)
            want = oracle.top_k(x, 7)
            np.testing.assert_array_equal(indices.cpu().numpy(), want.indices)
            np.testing.assert_array_equal(values.cpu().numpy(), want.values)
        if graphed:  # call 1 one-launch, call 2 its capture, calls 2 to 4 replays
            assert one_launch_calls == [batch] and len(stand_in) == before + 1
            assert stand_in[-1].replays == 3
        else:
            assert one_launch_calls == [batch] * 4 and len(stand_in) == before


@pytest.mark.parametrize("in_place", [False, True])
def test_masks_by_address_replay_where_the_tensors_are(stand_in, monkeypatch, in_place):
    """Masks above the static graphs' batches (here 20 rows) replay graphs that read the logits
    and write the mask where they are: in place, the caller's own logits are masked (and
    returned); out of place, the call's own output is written (and returned), here always at one
    address. New values in the same tensors replay one graph, the capturing call returns its
    warm-up's result (masked once, not twice), per-row k and p are copied in, another address is
    a new key, and every mask is the oracle's."""
    out_buffer = torch.empty((20, 1001), dtype=torch.float32, device=DEVICE)
    if not in_place:
        monkeypatch.setattr(ops, "_new_output", lambda src: out_buffer)
    rng = np.random.default_rng(17)
    V = 1001
    logits = torch.empty((20, V), dtype=torch.float32, device=DEVICE)
    k_t = torch.empty(20, dtype=torch.int64, device=DEVICE)
    p_t = torch.empty(20, dtype=torch.float32, device=DEVICE)
    for step in range(4):
        x = _rows(rng, 20, V)
        k_rows = rng.integers(0, V + 2, 20)
        p_rows = rng.choice([0.0, 1e-7, 0.3, 0.9, 0.99, 1.0], 20).astype(np.float32)
        logits.copy_(torch.tensor(x))
        k_t.copy_(torch.tensor(k_rows))
        p_t.copy_(torch.tensor(p_rows))
        got = ops.top_k_top_p_mask(logits, k_t, p_t, inplace=in_place)
        assert got is (logits if in_place else out_buffer)
        _check(got, x, k_rows, p_rows)
        if not in_place:
            np.testing.assert_array_equal(logits.cpu().numpy(), x)
        assert len(stand_in) == (0 if step == 0 else 1)
    assert stand_in[0].replays == 2  # calls 3 and 4 (call 2 took its warm-up's result)
    entry = next(iter(eager_graph._GRAPHS.values()))
    # no reference kept to the logits or the output (a kept one stays allocated, and the
    # caller's next tensor comes at another address: a new key each call)
    assert all(t is None for t in entry.inputs[:2 if not in_place else 1])
    assert entry.output is None
    other = logits.clone()  # another address: a new key, seen once
    x = _rows(rng, 20, V)
    other.copy_(torch.tensor(x))
    _check(ops.top_k_top_p_mask(other, 30, 0.8, inplace=in_place), x, 30, 0.8)
    assert len(stand_in) == 1 and len(eager_graph._SEEN) == 1


@pytest.mark.parametrize("fails_in", ["warm_up", "capture"])
def test_an_in_place_capture_that_fails_masks_once(stand_in, monkeypatch, fails_in):
    """A by-address in-place key whose capture raises after its warm-up returns the warm-up's
    result (masked once); one whose warm-up raises runs the launches as they are. Either way
    the key then stays on the plain path, with the oracle's masks."""

    class Failing(_StandInCapture):
        @classmethod
        def warm_up(cls, run, static, device):
            if fails_in == "warm_up":
                raise RuntimeError("no warm-up")
            return super().warm_up(run, static, device)

        @classmethod
        def capture(cls, run, static, device):
            raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(eager_graph, "_CAPTURE", Failing)
    rng = np.random.default_rng(18)
    logits = torch.empty((12, 777), dtype=torch.float32, device=DEVICE)
    for _ in range(3):
        x = _rows(rng, 12, 777)
        logits.copy_(torch.tensor(x))
        got = ops.top_k_top_p_mask(logits, 40, 0.7, inplace=True)
        assert got is logits
        _check(got, x, 40, 0.7)
    assert stand_in == [] and len(eager_graph._FAILED) == 1


def test_usable_only_for_small_cuda_batches(monkeypatch):
    monkeypatch.setattr(eager_graph, "ENABLED", True)
    assert not eager_graph.usable(torch.zeros((1, 8)))  # a CPU tensor
    monkeypatch.setattr(eager_graph, "ENABLED", False)
    if ON_GPU:
        assert not eager_graph.usable(torch.zeros((1, 8), device="cuda"))
        monkeypatch.setattr(eager_graph, "ENABLED", True)
        assert eager_graph.usable(torch.zeros((eager_graph.MAX_ROWS, 8), device="cuda"))
        assert not eager_graph.usable(torch.zeros((eager_graph.MAX_ROWS + 1, 8), device="cuda"))
        too_big = eager_graph.MAX_BYTES // 4 + 1
        assert not eager_graph.usable(torch.zeros((1, too_big), device="cuda"))


@pytest.mark.gpu
@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gpu_eager_graphs_equal_the_plain_path(monkeypatch, dtype, in_place):
    """Real CUDA graphs (V = 131072, B = 1 and 3): each call's mask equals the plain path's bit
    for bit, over new inputs at one key, per-row k / p tensors, on a non-default stream, and
    inside the caller's own capture (no graph of qrita's: the launches go into that capture)."""
    monkeypatch.setattr(eager_graph, "ENABLED", True)
    monkeypatch.setattr(eager_graph, "IN_PLACE", in_place)
    eager_graph.clear()
    rng = np.random.default_rng(8)
    V = 131072

    for batch in (1, 3):
        k_t = torch.tensor(rng.integers(1, V, batch), device="cuda")
        p_t = torch.tensor(rng.uniform(0.1, 1.0, batch), dtype=torch.float32, device="cuda")
        for _ in range(3):
            t = torch.tensor(_rows(rng, batch, V), device="cuda").to(dtype)
            for k, p in ((None, 0.9), (50, None), (k_t, p_t)):
                got = ops.top_k_top_p_mask(t, k, p)
                want = _plain(monkeypatch, ops.top_k_top_p_mask, t, k, p)
                assert torch.equal(_bits(got), _bits(want)), (batch, k, p)
    assert len(eager_graph._GRAPHS) == 6
    # a non-default stream, after work queued on it
    t = torch.tensor(_rows(rng, 1, V), device="cuda").to(dtype)
    want = _plain(monkeypatch, ops.top_k_top_p_mask, t, None, 0.9)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        src = torch.zeros_like(t)
        src.copy_(t)
        got = [ops.top_k_top_p_mask(src, None, 0.9) for _ in range(2)]  # captured at the 2nd
    stream.synchronize()
    assert all(torch.equal(_bits(g), _bits(want)) for g in got)
    # inside the caller's capture: the plain launches are captured, no new graph of qrita's
    n_graphs = len(eager_graph._GRAPHS)
    static = t.clone()
    _plain(monkeypatch, ops.top_k_top_p_mask, static, None, 0.8)  # compile outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = ops.top_k_top_p_mask(static, None, 0.8)
    assert len(eager_graph._GRAPHS) == n_graphs
    t2 = torch.tensor(_rows(rng, 1, V), device="cuda").to(dtype)
    static.copy_(t2)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(_bits(out), _bits(_plain(monkeypatch, ops.top_k_top_p_mask, t2, None, 0.8)))
    eager_graph.clear()


@pytest.mark.gpu
@pytest.mark.parametrize("in_place", [False, True])
def test_gpu_the_capture_records_what_the_warm_up_ran(monkeypatch, in_place):
    """Real CUDA graphs, top-k alone (whose eager calls take the one-launch kernels and whose
    captures the pipeline's) and top-p, fp32 and bf16 at B = 1 and 8: every call's second
    run captures, the warm-up asks ``launch.one_launch`` exactly what the capture asks and
    gets the same answers, Triton compiles nothing while the capture runs
    (``knobs.runtime.jit_cache_hook``: called at each kernel missing from its in-memory
    cache), and the replays equal the plain path. Out of place, the warm-up and capture ask
    ``one_launch`` and it says no; the in-place graph (the default, ``IN_PLACE``) never asks
    (a mask written over its input takes the pipeline)."""
    import triton

    from qrita.backends.triton import launch

    monkeypatch.setattr(eager_graph, "ENABLED", True)
    monkeypatch.setattr(eager_graph, "IN_PLACE", in_place)
    monkeypatch.delenv("QRITA_ONE_LAUNCH", raising=False)
    eager_graph.clear()
    phase = ["plain"]
    asked = {"plain": [], "warm-up": [], "capture": []}
    missing_in_capture = []
    captures = []
    real_one_launch = launch.one_launch

    def recorded_one_launch(batch, x):
        answer = real_one_launch(batch, x)
        asked[phase[0]].append(answer)
        return answer

    def cache_hook(*args, **kwargs):
        if phase[0] == "capture":
            missing_in_capture.append(kwargs.get("fn", args[:1]))
        return None

    class Phased(eager_graph._CudaCapture):
        @staticmethod
        def warm_up(run, static, device):
            phase[0] = "warm-up"
            try:
                eager_graph._CudaCapture.warm_up(run, static, device)
            finally:
                phase[0] = "plain"

        @staticmethod
        def capture(run, static, device):
            captures.append(device)
            phase[0] = "capture"
            try:
                return eager_graph._CudaCapture.capture(run, static, device)
            finally:
                phase[0] = "plain"

    monkeypatch.setattr(launch, "one_launch", recorded_one_launch)
    monkeypatch.setattr(ops, "one_launch", recorded_one_launch)
    monkeypatch.setattr(eager_graph, "_CAPTURE", Phased)
    monkeypatch.setattr(triton.knobs.runtime, "jit_cache_hook", cache_hook)
    rng = np.random.default_rng(11)
    V = 65521  # B = 8 in fp32 just under the 2 MiB limit
    for dtype in (torch.float32, torch.bfloat16):
        for batch in (1, 8):
            for k, p in ((1000, None), (50, None), (None, 0.9)):
                t = torch.tensor(_rows(rng, batch, V), device="cuda").to(dtype)
                monkeypatch.setattr(eager_graph, "ENABLED", False)
                want = ops.top_k_top_p_mask(t, k, p)
                monkeypatch.setattr(eager_graph, "ENABLED", True)
                for _ in range(3):  # plain, capture, replay
                    got = ops.top_k_top_p_mask(t, k, p)
                    assert torch.equal(_bits(got), _bits(want)), (dtype, batch, k, p)
    assert len(captures) == 2 * 2 * 3  # (dtype, batch, k / p): each key's second call
    # a graph takes the pipeline's kernels
    assert not any(asked["capture"]), asked
    assert bool(asked["capture"]) == (not in_place), asked
    assert asked["warm-up"] == asked["capture"], asked
    assert True in asked["plain"], asked  # the eager top-k calls took the one-launch kernels
    assert missing_in_capture == [], [str(m)[:200] for m in missing_in_capture[:5]]
    eager_graph.clear()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gpu_sampler_graphs_equal_the_plain_path(monkeypatch, dtype):
    """Real CUDA graphs for ``sample`` (V = 131072, B = 1 and 8): over a decode loop's offsets,
    per-row seed tensors, k + p + temperature and the log-probabilities, every call's tokens
    equal the plain path's bit for bit, and a new offset per call replays one graph per key."""
    from qrita.backends.triton import sampling_ops

    monkeypatch.setattr(eager_graph, "ENABLED", True)
    monkeypatch.setattr(eager_graph, "SAMPLE", True)
    monkeypatch.setattr(eager_graph, "ADDRESS_ROWS", 0)
    eager_graph.clear()
    rng = np.random.default_rng(13)
    V = 131072

    keys = 0
    for batch in (1, 8):
        x = torch.tensor(_rows(rng, batch, V), device="cuda").to(dtype)
        seeds = torch.tensor(rng.integers(0, 2**62, batch), device="cuda")
        for kw in (dict(p=0.9), dict(k=100, p=0.9, temperature=0.8),
                   dict(p=0.95, min_p=0.02, return_logprob=True)):
            # (fp32 at B = 8 is over the size limit: the plain path; at B = 1 an int seed and
            # a one-row seed tensor are one key)
            keys += 0 if not eager_graph.usable(x) else 1 if batch == 1 else 2
            for step in range(4):
                for seed in (1234, seeds):
                    want = _plain(monkeypatch, sampling_ops.sample, x, seed=seed, offset=step, **kw)
                    got = sampling_ops.sample(x, seed=seed, offset=step, **kw)
                    for g, w in zip(got if isinstance(got, tuple) else (got,),
                                    want if isinstance(want, tuple) else (want,)):
                        assert torch.equal(g, w), (batch, kw, step)
    assert len(eager_graph._GRAPHS) == min(keys, eager_graph.MAX_GRAPHS)
    eager_graph.clear()
    # by address (QRITA_EAGER_GRAPHS_ADDRESS_ROWS) at B = 8 (fp32: over the static limit) and 64
    monkeypatch.setattr(eager_graph, "ADDRESS_ROWS", 256)
    for batch in (8, 64):
        x = torch.tensor(_rows(rng, batch, V), device="cuda").to(dtype)
        for kw in (dict(p=0.9), dict(k=100, p=0.9, temperature=0.8, return_logprob=True)):
            for step in range(4):
                want = _plain(monkeypatch, sampling_ops.sample, x, seed=99, offset=step, **kw)
                got = sampling_ops.sample(x, seed=99, offset=step, **kw)
                for g, w in zip(got if isinstance(got, tuple) else (got,),
                                want if isinstance(want, tuple) else (want,)):
                    assert torch.equal(g, w), (batch, kw, step)
    assert eager_graph._GRAPHS
    eager_graph.clear()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gpu_top_k_graphs_by_address_equal_the_plain_path(monkeypatch, dtype):
    """Real CUDA graphs for ``top_k`` at B = 16, 64 and 256 (V = 131072) reading the logits by
    address: new values written into one tensor, and a loop that makes new logits every step
    (the old ones freed, so the allocator often hands back the same address), give the plain
    path's values and indices bit for bit, k = 50 and 1000, sorted and not."""
    monkeypatch.setattr(eager_graph, "ENABLED", True)
    monkeypatch.setattr(eager_graph, "ADDRESS_ROWS", 256)
    monkeypatch.setattr(eager_graph, "TOP_K_FROM", 9)  # B = 16 takes the graph too
    eager_graph.clear()
    rng = np.random.default_rng(15)
    V = 131072

    for batch in (16, 64, 256):  # 16: ahead of the one-launch kernel (``TOP_K_FROM`` 9)
        logits = torch.empty((batch, V), dtype=dtype, device="cuda")
        for k, is_sorted in ((50, True), (1000, True), (50, False)):
            for _ in range(3):
                logits.copy_(torch.tensor(_rows(rng, batch, V), device="cuda"))
                got = ops.top_k(logits, k, sorted=is_sorted)
                want = _plain(monkeypatch, ops.top_k, logits, k, sorted=is_sorted)
                assert torch.equal(got[1], want[1]) and torch.equal(_bits(got[0]),
                                                                    _bits(want[0]))
        del logits
        for _ in range(4):  # fresh logits each step
            step = torch.tensor(_rows(rng, batch, V), device="cuda").to(dtype)
            got, want = ops.top_k(step, 50), _plain(monkeypatch, ops.top_k, step, 50)
            assert torch.equal(got[1], want[1]) and torch.equal(_bits(got[0]), _bits(want[0]))
            del step
    assert eager_graph._GRAPHS  # some calls replayed
    eager_graph.clear()


@pytest.mark.gpu
@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gpu_masks_by_address_equal_the_plain_path(monkeypatch, dtype, in_place):
    """Real CUDA graphs for masks at B = 16 and 64 (V = 131072) reading the logits and writing
    the mask by address: new values in one tensor, then a loop that makes new logits every step
    and drops the last step's output (the allocator often hands back the same addresses), give
    the plain path's masks bit for bit (top-k, top-p, both, per-row k / p tensors), masked once."""
    monkeypatch.setattr(eager_graph, "ENABLED", True)
    monkeypatch.setattr(eager_graph, "ADDRESS_ROWS", 256)
    monkeypatch.setattr(eager_graph, "MASK_ADDRESS", True)
    eager_graph.clear()
    rng = np.random.default_rng(19)
    V = 131072

    def both(logits, k, p):
        want = _plain(monkeypatch, ops.top_k_top_p_mask, logits.clone(), k, p, inplace=True)
        got = ops.top_k_top_p_mask(logits, k, p, inplace=in_place)
        assert (got is logits) == in_place
        return got, want

    for batch in (16, 64):
        logits = torch.empty((batch, V), dtype=dtype, device="cuda")
        k_t = torch.tensor(rng.integers(1, 2000, batch), device="cuda")
        p_t = torch.tensor(rng.choice([0.5, 0.9, 0.99, 1.0], batch), dtype=torch.float32,
                           device="cuda")
        for k, p in ((50, None), (None, 0.9), (100, 0.9), (k_t, p_t)):
            for _ in range(3):
                logits.copy_(torch.tensor(_rows(rng, batch, V), device="cuda"))
                got, want = both(logits, k, p)
                assert torch.equal(_bits(got), _bits(want)), (batch, k, p)
        del logits
        for _ in range(4):  # fresh logits each step, the last output dropped
            step = torch.tensor(_rows(rng, batch, V), device="cuda").to(dtype)
            got, want = both(step, None, 0.9)
            assert torch.equal(_bits(got), _bits(want))
            del step, got, want
    assert eager_graph._GRAPHS  # some calls replayed
    eager_graph.clear()
