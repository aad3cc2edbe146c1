"""CPU checks of the benchmark harness (benchmarks/): everything that does not need a GPU."""

from __future__ import annotations

import csv
import math
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from benchmarks import baselines, bench, plot  # noqa: E402
from qrita.reference import oracle  # noqa: E402


# ------------------------------------------------------------------------------------ arguments
def test_parse_defaults():
    a = bench.parse_args([])
    assert a.ops == ["masks", "top_k", "sample"]
    assert a.batch == [1, 8, 64, 256, 1024]
    assert a.vocab == [32768, 131072, 262144]
    assert a.dtypes == ["float32", "bfloat16"]
    assert a.workloads == ["zipf", "gaussian"]
    assert a.impls == ["qrita", "torch_sort", "flashinfer"]
    assert (a.warmup, a.rep) == (10.0, 50.0)
    assert a.out == "results" and not a.graphs and not a.quick


def test_parse_lists_and_quick():
    a = bench.parse_args(["--ops", "top_k", "--batch", "2,16", "--vocab", "1000", "--dtypes",
                          "bfloat16", "--workloads", "gaussian", "--peers", "torch_sort",
                          "--graphs", "--out", "x"])
    assert a.ops == ["top_k"] and a.batch == [2, 16] and a.vocab == [1000]
    assert a.dtypes == ["bfloat16"] and a.workloads == ["gaussian"]
    assert a.impls == ["qrita", "torch_sort"] and a.graphs and a.out == "x"
    q = bench.parse_args(["--quick"])
    assert q.batch == [1, 64] and q.vocab == [32768] and q.dtypes == ["float32"]
    q2 = bench.parse_args(["--quick", "--vocab", "131072"])  # explicit beats --quick
    assert q2.vocab == [131072] and q2.batch == [1, 64]
    assert bench.parse_args(["--peers", ""]).impls == ["qrita"]


@pytest.mark.parametrize("bad", [["--ops", "sampling"], ["--dtypes", "int8"], ["--workloads", "x"],
                                 ["--peers", "vllm"], ["--batch", "0"], ["--batch", "a"]])
def test_parse_rejects(bad, capsys):
    with pytest.raises(SystemExit):
        bench.parse_args(bad)


def test_grid_cells():
    cells = bench.grid_cells(bench.parse_args(["--quick"]))
    # per (B): zipf 5 mask + 2 select + 5 sample, gaussian 3 mask + 2 select + 3 sample; quick
    # has 2 batch sizes
    assert len(cells) == 2 * (5 + 2 + 5 + 3 + 2 + 3)
    assert {c.op for c in cells} == {"masks", "top_k", "sample"}
    names = {(c.workload, c.scenario) for c in cells}
    assert ("zipf", "topk100_topp0.9") in names and ("gaussian", "topp0.99") in names
    c = next(c for c in cells if c.scenario == "topk100_topp0.9")
    assert (c.k, c.p) == (100, 0.9)
    only = bench.grid_cells(bench.parse_args(["--quick", "--scenarios", "topk50,k50"]))
    assert {c.scenario for c in only} == {"topk50", "k50"}
    # any other k<N> named is a selection scenario too (k beyond the fast path's slots)
    large = bench.grid_cells(bench.parse_args(["--quick", "--ops", "top_k", "--scenarios",
                                               "k4096,k2048"]))
    assert {(c.scenario, c.k) for c in large} == {("k4096", 4096), ("k2048", 2048)}


def test_workloads_shapes():
    rng = np.random.default_rng(0)
    z = bench.make_logits("zipf", 3, 1000, rng)
    g = bench.make_logits("gaussian", 3, 1000, rng)
    assert z.shape == g.shape == (3, 1000) and z.dtype == g.dtype == np.float32
    # Zipf rows are permutations of the same log-probabilities
    assert np.array_equal(np.sort(z[0]), np.sort(z[1]))
    assert not np.array_equal(z[0], z[1])
    assert abs(np.exp(z[0].astype(np.float64)).sum() - 1) < 1e-4
    assert 1.5 < g.std() < 2.5


# ------------------------------------------------------------------------------------ baselines
def _tie_free(B, V, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.permutation(B * V).reshape(B, V).astype(np.float32) / (B * V) * 8.0
    return x


@pytest.mark.parametrize("k", [1, 5, 50, 255, 256, 0, 1000])
def test_torch_sort_topk_keep_set_matches_oracle(k):
    x = _tie_free(4, 256)
    out = baselines.torch_sort_mask(torch.from_numpy(x), k, None).numpy()
    kept = out != -np.inf
    assert np.array_equal(kept, oracle.keep_mask(x, k, None))
    assert np.array_equal(out[kept], x[kept])


@pytest.mark.parametrize("k,p", [(None, 0.9), (None, 0.5), (20, 0.9), (None, 0.0), (None, 1.0)])
def test_torch_sort_top_p_matches_oracle(k, p):
    x = bench.make_logits("gaussian", 4, 300, np.random.default_rng(1))
    out = baselines.torch_sort_mask(torch.from_numpy(x), k, p).numpy()
    ok, note = bench.check_mask(x, out, k, p)
    assert ok, note


def test_torch_sort_per_row_params():
    x = _tie_free(3, 100)
    k = torch.tensor([1, 0, 10])
    p = torch.tensor([1.0, 0.9, 0.5])
    out = baselines.torch_sort_mask(torch.from_numpy(x), k, p).numpy()
    ok, note = bench.check_mask(x, out, k.numpy(), p.numpy())
    assert ok, note


def test_torch_sort_bf16_and_1d():
    x = torch.tensor([3.0, 1.0, 3.0, 2.0, 1.0], dtype=torch.bfloat16)
    out = baselines.torch_sort_mask(x, 2, None)
    assert out.dtype == torch.bfloat16 and out.shape == (5,)
    assert (out != -torch.inf).tolist() == [True, False, True, False, False]


def test_torch_topk_matches_oracle():
    x = _tie_free(3, 200)
    v, i = baselines.torch_topk(torch.from_numpy(x), 7)
    ok, note = bench.check_topk(x, v.numpy(), i.numpy(), 7, exact_order=True)
    assert ok, note


# ------------------------------------------------------------------------------------ checkers
@pytest.mark.parametrize("shared", [True, False])
def test_check_mask_rejects_wrong_top_k(shared):
    x = _tie_free(2, 64)
    out = np.where(oracle.keep_mask(x, 5, None), x, -np.inf).astype(np.float32)
    assert bench.check_mask(x, out, 5, None, shared=shared)[0]
    bad = out.copy()
    bad[0, np.argmin(x[0])] = x[0, np.argmin(x[0])]  # keeps one extra entry
    assert not bench.check_mask(x, bad, 5, None, shared=shared)[0]
    changed = out.copy()
    j = np.argmax(x[1])
    changed[1, j] = np.nextafter(changed[1, j], np.float32(np.inf))
    assert not bench.check_mask(x, changed, 5, None, shared=shared)[0]


@pytest.mark.parametrize("shared", [True, False])
def test_check_mask_top_p_margin(shared):
    # probabilities 0.5, 0.25, 0.25: with p = 0.75 the mass before the third entry is exactly p
    x = np.log(np.array([[0.5, 0.25, 0.25, 1e-30]], dtype=np.float64)).astype(np.float32)
    truth = oracle.keep_mask(x, None, 0.75)
    assert truth.tolist() == [[True, True, False, False]]
    keep3 = np.where([[True, True, True, False]], x, -np.inf).astype(np.float32)
    ok, note = bench.check_mask(x, keep3, None, 0.75, shared=shared)  # within 1e-6: allowed
    assert ok, note
    keep1 = np.where([[True, False, False, False]], x, -np.inf).astype(np.float32)
    assert not bench.check_mask(x, keep1, None, 0.75, shared=shared)[0]
    gap = np.where([[True, False, True, False]], x, -np.inf).astype(np.float32)  # not a prefix
    assert not bench.check_mask(x, gap, None, 0.75, shared=shared)[0]


def test_check_mask_probs_kind():
    x = _tie_free(2, 50)
    keep = oracle.keep_mask(x, None, 0.9)
    probs = np.where(keep, 0.1, 0.0).astype(np.float32)
    assert bench.check_mask(x, probs, None, 0.9, kind="probs")[0]


@pytest.mark.parametrize("shared", [True, False])
def test_check_topk_set_vs_order(shared):
    x = _tie_free(2, 100)
    ref = oracle.top_k(x, 6)
    assert bench.check_topk(x, ref.values, ref.indices, 6, exact_order=True, shared=shared)[0]
    rev_i = ref.indices[:, ::-1].copy()
    rev_v = ref.values[:, ::-1].copy()
    assert not bench.check_topk(x, rev_v, rev_i, 6, exact_order=True, shared=shared)[0]
    assert bench.check_topk(x, rev_v, rev_i, 6, exact_order=False)[0]
    wrong = ref.indices.copy()
    wrong[0, 0] = np.argmin(x[0])
    assert not bench.check_topk(x, np.take_along_axis(x, wrong, -1), wrong, 6, False)[0]


def test_check_rows_idx():
    assert bench.check_rows_idx(1, 3) == [0]
    assert bench.check_rows_idx(1024, 3) == [0, 512, 1023]
    assert bench.check_rows_idx(8, 0) == []


# ------------------------------------------------------------------------------------ output
def _fake_rows():
    rows = []
    for B in (1, 8, 64):
        for impl, us in (("qrita", 10.0 * B), ("torch_sort", 50.0 * B), ("flashinfer", float("nan"))):
            rows.append(dict(device="FakeGPU", torch="2.x", triton="3.x", qrita_commit="abc123",
                             command="python benchmarks/bench.py --quick", op="masks",
                             workload="zipf", scenario="topk50", B=B, V=32768, dtype="float32",
                             impl=impl, us_median=us, us_graph=float("nan"), bytes=B * 32768 * 8,
                             gbps=1.0, floor_us=0.1 * B, floor_ratio=us / (0.1 * B),
                             peak_extra_mib=1.5, persistent_mib=0.0,
                             speedup_vs_torch_sort=50.0 * B / us,
                             correct="yes" if impl == "qrita" else ("skip" if impl == "flashinfer" else "no"),
                             note="flashinfer unavailable" if impl == "flashinfer" else ""))
    return rows


def test_format_table():
    t = bench.format_table(_fake_rows())
    lines = t.splitlines()
    assert "qrita_us" in lines[0] and "torch_sort_us" in lines[0] and "flashinfer_us" in lines[0]
    assert len([ln for ln in lines if ln.startswith("masks")]) == 3
    row64 = next(ln for ln in lines if ln.startswith("masks") and " 64 " in ln)
    assert "640.0" in row64 and "3200" in row64 and "5.00" in row64 and "yn-" in row64
    assert "NO: torch_sort masks zipf topk50 B=1" in t
    assert bench.format_table([]) == "(no results)"


def test_csv_roundtrip(tmp_path):
    path = bench.write_csv(_fake_rows(), str(tmp_path / "sub" / "r.csv"))
    with open(path, newline="") as f:
        got = list(csv.DictReader(f))
    assert len(got) == 9
    assert list(got[0].keys()) == bench.CSV_COLUMNS
    assert got[0]["device"] == "FakeGPU" and got[0]["qrita_commit"] == "abc123"
    assert got[2]["us_median"] == ""  # NaN -> empty
    assert float(got[3]["us_median"]) == 80.0


def test_plot_from_fake_csv(tmp_path):
    pytest.importorskip("matplotlib")
    path = bench.write_csv(_fake_rows(), str(tmp_path / "r.csv"))
    outs = plot.plot_csv(path, str(tmp_path / "png"))
    assert len(outs) == 1 and outs[0].endswith(".png") and os.path.getsize(outs[0]) > 1000
    assert plot.main([path, "--out", str(tmp_path / "png2")]) == 0


# ------------------------------------------------------------------------------------ end to end
@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU message")
def test_main_without_cuda(capsys):
    assert bench.main(["--quick"]) == 2
    assert "no CUDA device" in capsys.readouterr().err


def test_main_cpu_debug_end_to_end(tmp_path):
    """The whole harness on CPU tensors (wall-clock timing): rows, CSV, table."""
    rc = bench.main(["--cpu-debug", "--no-progress", "--batch", "2", "--vocab", "512",
                     "--dtypes", "float32,bfloat16", "--workloads", "zipf", "--scenarios",
                     "topk50,topp0.9,k50", "--rep", "1", "--warmup", "1", "--out", str(tmp_path)])
    assert rc == 0
    (csv_path,) = list(tmp_path.glob("bench_*.csv"))
    with open(csv_path, newline="") as f:
        got = list(csv.DictReader(f))
    assert len(got) == 2 * 5 * 3  # dtypes x (2 masks, 1 top_k, 2 sample scenarios) x impls
    samples = [r for r in got if r["op"] == "sample"]
    assert len(samples) == 2 * 2 * 3
    # qrita's seeded tokens equal the reference's; the sort baseline's random draw is in support
    assert all(r["correct"] == "yes" for r in samples if r["impl"] != "flashinfer"), \
        [r["note"] for r in samples]
    ts = [r for r in got if r["impl"] == "torch_sort"]
    # the sort mask is exact (stable sort); torch.topk may break bf16 ties differently
    assert all(r["correct"] == "yes" for r in ts if r["op"] == "masks"), [r["note"] for r in ts]
    assert all(r["correct"] in ("yes", "no") for r in ts)
    assert all(not math.isnan(float(r["us_median"])) for r in ts)
    assert all(float(r["speedup_vs_torch_sort"]) == 1.0 for r in ts)
    fi = [r for r in got if r["impl"] == "flashinfer"]
    assert all(r["correct"] in ("skip", "yes", "no") for r in fi)


def test_check_tokens_support_and_exactness():
    """A sampled token must lie in its row's kept set; qrita's (seeded) must also equal the
    reference sampler's token."""
    rng = np.random.default_rng(5)
    x = rng.normal(0.0, 2.0, size=(3, 40)).astype(np.float32)
    kept, want = bench.sample_reference(x, 5, None)
    assert kept.sum(axis=1).tolist() == [5, 5, 5] and all(kept[r, want[r]] for r in range(3))
    assert bench.check_tokens(want, (kept, want), exact=True) == (True, "")
    other = np.array([int(np.flatnonzero(kept[r] & (np.arange(40) != want[r]))[0])
                      for r in range(3)])
    ok, note = bench.check_tokens(other, (kept, want), exact=True)
    assert not ok and "differs from the reference" in note
    assert bench.check_tokens(other, (kept, want), exact=False)[0]
    outside = want.copy()
    outside[1] = int(np.flatnonzero(~kept[1])[0])
    ok, note = bench.check_tokens(outside, (kept, want), exact=False)
    assert not ok and "rows [1]" in note
    assert not bench.check_tokens(np.array([0, 1, 99]), (kept, want), exact=False)[0]


def test_torch_sort_sample_stays_in_the_kept_set():
    rng = np.random.default_rng(6)
    x_np = rng.normal(0.0, 2.0, size=(4, 64)).astype(np.float32)
    kept = oracle.keep_mask(x_np, 7, 0.8)
    for _ in range(20):
        tok = baselines.torch_sort_sample(torch.from_numpy(x_np), 7, 0.8).numpy()
        assert all(kept[r, tok[r]] for r in range(4))


def test_slow_guard_and_commit_env(tmp_path, monkeypatch):
    monkeypatch.setenv("QRITA_COMMIT", "feedbee")
    monkeypatch.setattr(bench, "REPO", str(tmp_path))  # not a git checkout: falls back to the env
    assert bench.git_commit(str(tmp_path)) == "feedbee"
    # in a checkout too, the environment wins (the device's copy may hold a stale .git)
    assert bench.git_commit(os.path.dirname(os.path.dirname(bench.__file__))) == "feedbee"
    monkeypatch.delenv("QRITA_COMMIT")
    assert bench.git_commit(str(tmp_path)) == "unknown"
    monkeypatch.setenv("QRITA_COMMIT", "feedbee")
    rc = bench.main(["--cpu-debug", "--no-progress", "--batch", "2", "--vocab", "256", "--dtypes",
                     "float32", "--workloads", "gaussian", "--ops", "masks", "--scenarios", "topk50",
                     "--peers", "torch_sort", "--max-call-ms", "0", "--out", str(tmp_path)])
    assert rc == 0
    (csv_path,) = list(tmp_path.glob("bench_*.csv"))
    with open(csv_path, newline="") as f:
        got = list(csv.DictReader(f))
    assert len(got) == 2
    assert all("slow: one call timed" in r["note"] for r in got)
    assert all(r["correct"] == "yes" for r in got), [r["note"] for r in got]


# ------------------------------------------------------------------------------------ knob_ab
def test_knob_ab_interleaves_and_restores(tmp_path, monkeypatch, capsys):
    """benchmarks/knob_ab.py on the CPU (the reference path): every (batch, round, value, call)
    is timed once, the rounds alternate the values' order, the CSV rows carry the metadata, and
    the knob is as it was afterwards."""
    from benchmarks import knob_ab

    monkeypatch.setenv("QRITA_TEST_KNOB", "before")
    calls = ",".join(knob_ab.CALLS)
    assert knob_ab.main(["--out", str(tmp_path), "--knob", "QRITA_TEST_KNOB", "--values",
                         "a=1,b|c=2", "--rounds", "2", "--batch", "1,2", "--vocab", "1500",
                         "--device", "cpu", "--calls", calls]) == 0
    assert os.environ["QRITA_TEST_KNOB"] == "before"
    with open(tmp_path / "knob_ab.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * 2 * 2 * len(knob_ab.CALLS)
    first = [r["value"] for r in rows if r["batch"] == "1" and r["call"] == "top_k k50"]
    assert first == ["a=1,b", "c=2", "c=2", "a=1,b"]  # "|" splits; round 1 reversed
    assert {r["device"] for r in rows} == {"cpu"} and all(r["command"] for r in rows)
    assert all(float(r["eager_us"]) > 0 and float(r["sync_us"]) > 0 for r in rows)
    assert "B=2" in capsys.readouterr().out


def test_knob_ab_checks_before_timing(tmp_path, monkeypatch):
    """A wrong answer stops knob_ab before anything is timed or written."""
    import qrita
    from benchmarks import knob_ab

    real = qrita.top_k

    def wrong(x, k):
        values, indices = real(x, k)
        return values, indices.flip(-1)

    monkeypatch.setattr(qrita, "top_k", wrong)
    with pytest.raises(AssertionError):
        knob_ab.main(["--out", str(tmp_path), "--knob", "QRITA_TEST_KNOB", "--rounds", "1",
                      "--batch", "1", "--vocab", "500", "--device", "cpu", "--calls", "top_k k50"])
    assert not (tmp_path / "knob_ab.csv").exists()


@pytest.mark.parametrize("p", [1e-7, 0.3, 0.9, 0.99])
def test_topp_levels_sim_crossing_holds_the_boundary(p):
    """The histogram-levels model (benchmarks/topp_levels_sim.py): the level-2 crossing sub-bin
    holds the oracle's boundary value, and each level leaves at most what the one before it
    held, on smooth, tied and 16-bit-rounded rows."""
    from benchmarks import topp_levels_sim
    from qrita.testing import generators

    rng = np.random.default_rng(5)
    V = 4099
    rows = np.concatenate([generators.zipf_logits(2, V, 1.1, rng),
                           generators.gaussian_logits(2, V, 2.0, rng),
                           generators.bf16_round(generators.gaussian_logits(2, V, 2.0, rng)),
                           generators.quantised(generators.gaussian_logits(1, V, 2.0, rng), 3)])
    for row in rows:
        for nb1, nb2 in [(16, 16), (32, 64)]:
            n1, n2, copies, holds = topp_levels_sim.row_levels(row.astype(np.float32), p, nb1, nb2)
            assert holds, (p, nb1, nb2)
            assert 1 <= copies <= n2 <= n1 <= V
