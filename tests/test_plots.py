"""The pictures draw what results.json holds, and a stranger can read them: the bars are the
JSON's times, the points sit at each op's intensity and GFLOPS, the roofline's legend stays short,
no marker hides another and no text covers another; --replot redraws from the file alone."""
import json
import re
import struct

import matplotlib
import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.collections import PathCollection
from matplotlib.text import Text

import perf
import synthetic
from conftest import committed_results, run_perf

matplotlib.rcdefaults()  # matplotlib's own settings and bundled fonts, whatever matplotlibrc a
# learner keeps: the same text and font (FreeType's build may still move a label by a pixel)

SIX_T = {T: {op: ms * (T / 512) ** 1.6 for op, ms in synthetic.TIMES_MS[512].items()}
         for T in (64, 128, 256, 512, 1024, 2048)}


def awkward():
    """Points that coincide (scores and av at one place), a DRAM copy with no plateau and not
    past the L3, an L3 with no roof of its own, a disturbed run with long reasons, and a default
    heap at T = 512 far off the bars' scale."""
    res = synthetic.run(times_ms={64: {**synthetic.TIMES_MS[64], "av": 0.010},
                                  512: {**synthetic.TIMES_MS[512], "av": 0.90}},
                        verdict="disturbed", reasons=[
                            "other processes and interrupts used 1.02 CPUs on average while the "
                            "workers ran, and the run left 0 cores free (limit 0.25)",
                            "the later canary readings ran slower (speed -26%): on a laptop, "
                            "plug it in and set the performance governor"])
    # worker 3 left out (its figures from four of five processes at every T)
    res["canary"]["left_out"] = {"worker 3": {"canary_kernel": "blas", "ratio": 2.1, "other_ratio": 1}}
    for row in res["sweep"]:
        row["processes"].remove("worker 3")
    res["sweep_default_heap"][-1]["forward_s"] *= 4
    res["ceilings"]["levels"]["DRAM"].update(past_llc=False, plateau=False, GBps_half=31.0)
    res["ceilings"]["levels"]["L3"]["same_roof_as_DRAM"] = True
    res["ceilings"]["levels"] = {"L1d": {  # a small copy slower than larger ones: no roof
        "capacity_bytes": 32 << 10, "bytes": 16 << 10, "shared": False, "GBps": 21.6,
        "slower_than_larger": True, "same_roof_as_DRAM": False, "GBps_from": "1thread",
        "repeats": 8},
        **res["ceilings"]["levels"]}
    return res


def no_caches():
    """A machine that describes no cache (Windows, macOS): DRAM its only level."""
    res = synthetic.run()
    res["ceilings"]["levels"] = {"DRAM": res["ceilings"]["levels"]["DRAM"]}
    return res


CASES = {"committed": committed_results, "synthetic": synthetic.run,
         "six_T": lambda: synthetic.run(SIX_T), "awkward": awkward, "no_caches": no_caches}


@pytest.fixture(params=CASES, scope="module")
def res(request):
    return CASES[request.param]()


DRAWN = {}  # (plot, case): (its results, its figure), drawn once: the tests below only read it


def figure_of(plot, res):
    if (plot.__name__, id(res)) not in DRAWN:  # the results kept beside: an id never reused
        DRAWN[plot.__name__, id(res)] = res, plot(res)
    return DRAWN[plot.__name__, id(res)][1]


@pytest.fixture(scope="module", autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_the_stacked_bars_are_the_json_s_times(res):
    fig = figure_of(perf.plot_perf, res)
    ax = fig.axes[0]
    bars = ax.containers
    for i, op in enumerate(perf.OPS):
        np.testing.assert_allclose([b.get_height() for b in bars[i]],
                                   [r["ops"][op]["time_s"] * 1e3 for r in res["sweep"]])
    n = len(perf.OPS)  # a container per op, then the default heap's
    tops = [sum(b.get_height() for b in col) for col in zip(*bars[:n])]
    np.testing.assert_allclose(tops, [r["forward_s"] * 1e3 for r in res["sweep"]])
    labels = {t.get_text().split(" ms")[0] for t in fig.findobj(Text) if " ms\n" in t.get_text()}
    assert {f"{r['forward_s'] * 1e3:.3f}" for r in res["sweep"]} <= labels  # one definition
    default = {r["T"]: r["forward_s"] * 1e3 for r in res["sweep_default_heap"]}
    drawn = [b.get_height() for b in bars[n]]
    top = ax.get_ylim()[1]
    pairs = [(h, default[r["T"]]) for r, h in zip(res["sweep"], drawn)]
    # The default heap beside each T: never taller than its value, under the top; one that fits
    # well under the top drawn whole, and one cut short says so.
    assert all(h <= v * (1 + 1e-9) and h < top for h, v in pairs)
    assert all(h == pytest.approx(v) for h, v in pairs if v < 0.85 * top)
    cut = [h for h, v in pairs if h != pytest.approx(v)]
    assert len(cut) == sum("(off scale)" in t.get_text() for t in ax.texts)


def test_a_default_heap_off_the_scale_is_cut_under_the_top_and_says_so():
    """The bar cut so low that its label, which says so, fits above it inside the axes."""
    res = awkward()
    fig = perf.plot_perf(res)
    ax = fig.axes[0]
    bar = ax.containers[len(perf.OPS)][-1]
    assert bar.get_height() < res["sweep_default_heap"][-1]["forward_s"] * 1e3
    label, = [t for t in fig.findobj(Text) if "(off scale)" in t.get_text()]
    renderer = fig.canvas.get_renderer()
    box = label.get_window_extent(renderer)
    assert bar.get_window_extent(renderer).y1 <= box.y0 and box.y1 <= ax.bbox.y1
    plt.close(fig)


def test_the_roofline_points_sit_at_intensity_and_gflops(res):
    fig = figure_of(perf.plot_roofline, res)
    ax = fig.axes[0]
    for op in perf.OPS:
        rgba = mcolors.to_rgba(perf.COLORS[op])
        rings = [c for c in ax.collections if isinstance(c, PathCollection) and len(c.get_offsets())
                 and np.allclose(c.get_edgecolor()[0], rgba) and not c.get_facecolor().any()]
        assert len(rings) == 1, op
        np.testing.assert_allclose(rings[0].get_offsets(), [
            (r["ops"][op]["intensity"], r["ops"][op]["GFLOPS"]) for r in res["sweep"]])
    assert len(ax.get_legend().get_texts()) <= 14


def markers(fig):
    """(x, y, diameter in px, hollow) of every data marker of the figure's axes."""
    fig.canvas.draw()
    out = []
    for ax in fig.axes:
        for c in ax.collections:
            if not isinstance(c, PathCollection) or not len(c.get_offsets()):
                continue
            xy = ax.transData.transform(c.get_offsets())
            sizes = np.broadcast_to(c.get_sizes(), len(xy))
            hollow = not c.get_facecolor().any()
            out += [(x, y, np.sqrt(s) * fig.dpi / 72, hollow) for (x, y), s in zip(xy, sizes)]
    return out


def test_no_marker_hides_another(res, request):
    fig = figure_of(perf.plot_roofline, res)
    found = markers(fig)
    close = [(a, b) for i, a in enumerate(found) for b in found[i + 1:]
             if np.hypot(a[0] - b[0], a[1] - b[1]) <= 3]
    for a, b in close:  # one drawn over the other: the larger a ring around the smaller
        big, small = (a, b) if a[2] >= b[2] else (b, a)
        assert big[3] and big[2] >= 1.5 * small[2] * 0.999, (a, b)
    if request.node.callspec.params["res"] == "awkward":  # its scores and av coincide
        assert close


def text_boxes(fig):
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + fig.legends
    inside = {t for lg in legends for t in lg.findobj(Text)}
    undrawn = set()  # tick labels of ticks outside the view limits exist but are not drawn
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not lo - 1e-9 * abs(lo) <= tick.get_loc() <= hi + 1e-9 * abs(hi):
                    undrawn |= {tick.label1, tick.label2}
    boxes = [("legend", lg.get_window_extent(r)) for lg in legends]
    return boxes + [(t.get_text(), t.get_window_extent(r)) for t in fig.findobj(Text)
                    if t not in inside and t not in undrawn and t.get_visible()
                    and t.get_text().strip()]


def overlap(a, b):
    """How far two boxes overlap, the lesser of the two axes (pixels; <= 0: apart)."""
    return min(min(a.x1, b.x1) - max(a.x0, b.x0), min(a.y1, b.y1) - max(a.y0, b.y0))


@pytest.mark.parametrize("plot", [perf.plot_perf, perf.plot_roofline])
def test_no_text_covers_another_or_leaves_the_figure(res, plot):
    fig = figure_of(plot, res)
    boxes, W, H = text_boxes(fig), fig.bbox.width, fig.bbox.height
    for text, b in boxes:
        assert b.x0 >= -1 and b.y0 >= -1 and b.x1 <= W + 1 and b.y1 <= H + 1, text
    for i, (t1, b1) in enumerate(boxes):
        for t2, b2 in boxes[i + 1:]:
            assert overlap(b1, b2) <= 1, f"{t1!r} overlaps {t2!r}"


def test_no_label_of_the_bars_hides_under_the_inset(res):
    """The inset draws over the main axes: no label of theirs may sit under it (the check above
    sets text against text only). With T up to 2048 (six_T) four T fill the inset, which must stop
    before T = 2048's label."""
    fig = figure_of(perf.plot_perf, res)
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    assert any(ax.child_axes for ax in fig.axes), "no inset drawn: nothing below is checked"
    for ax in fig.axes:
        for inset in ax.child_axes:
            box = inset.get_tightbbox(r)  # its ticks, labels and title included
            for t in ax.texts:
                assert overlap(t.get_window_extent(r), box) <= 1, f"{t.get_text()!r} under the inset"
            # and the inset's own labels inside its frame (room above its bars for them)
            frame = inset.get_window_extent(r)
            for t in inset.texts:
                b = t.get_window_extent(r)
                assert b.y1 <= frame.y1 + 1 and b.x1 <= frame.x1 + 1, f"{t.get_text()!r} leaves the inset"


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_replot_redraws_from_results_alone(tmp_path):
    (tmp_path / "results.json").write_text(json.dumps(synthetic.run()))
    assert perf.main(["--replot", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["perf.png", "results.json",
                                                          "roofline.png"]
    assert png_size(tmp_path / "perf.png")[0] >= 1500 and png_size(tmp_path / "roofline.png")[0] >= 1400


def test_replot_bad_input_one_line_exit_2(tmp_path):
    cases = {"missing": None, "corrupt": "{not json", "wrong": '{"sweep": []}',
             "partial": '{"experiment": "15-attention-perf", "sweep": [{"T": 64, "ops": {}}]}'}
    for name, text in cases.items():
        d = tmp_path / name
        d.mkdir()
        (d / "perf.png").write_bytes(b"earlier")
        if text is not None:
            (d / "results.json").write_text(text)
        proc = run_perf("--replot", "--out", str(d))  # from the shell: no traceback either
        assert proc.returncode == 2, name
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
        assert (d / "perf.png").read_bytes() == b"earlier"


def test_the_footers_and_legend_say_what_each_mark_is_made_of(res):
    """What a picture says of its marks is true of the run, read off its text as a reader would
    and set against the JSON: the bars' and rings' processes and samples, what the canary set
    aside and left out, the hatched bars' own (one default-heap process), the roofs' repeats,
    and that the fused star writes neither S nor A."""
    cfg, dflt, c = res["config"], res["sweep_default_heap"][0], res["ceilings"]
    said = lambda fig: " ".join(t.get_text() for t in fig.texts).replace("\n", " ")  # noqa: E731
    bars, rings = figure_of(perf.plot_perf, res), figure_of(perf.plot_roofline, res)
    # How many processes made the figures (a range where one T has fewer), of how many workers
    # (the default-heap one aside); the samples, their length; the canary kernel and limit that set samples aside, each T's
    # count; who was left out, by which kernel.
    counts = sorted({len(r["processes"]) for r in res["sweep"]})
    for mark, text in (("bars", said(bars)), ("rings", said(rings))):
        m = re.search(mark + r": each op's time_s, the median over ([\d-]+) of this run's (\d+) "
                      r"workers .*\(its interval covers them only\)", text)
        assert m and (m[1].split("-"), int(m[2])) == (  # fewest to most
            list(map(str, dict.fromkeys([counts[0], counts[-1]]))), cfg["workers"])
        m = re.search(r"\((\d+) per T in all, each >= ([\d.]+) ms", text)
        assert (int(m[1]), float(m[2])) == (cfg["samples_per_T"], cfg["min_time_s"] * 1e3)
        m = re.search(r"the canary's (\w+) kernel over ([\d.]+)x its process's reference", text)
        assert (m[1], float(m[2])) == (res["canary"]["sample_kernel"], res["canary"]["sample_slow_ratio"])
        assert {int(T): int(n) for n, T in re.findall(r"(\d+) at T=(\d+)(?: \(x[\d.]+\))?[,;]", text)} == {
            r["T"]: r["samples_set_aside"] for r in res["sweep"]}
        assert re.findall(r"(worker \d+) left out \(canary (\w+)", text) == [
            (k, v["canary_kernel"]) for k, v in res["canary"]["left_out"].items()]
    m = re.search(r"hatched: the ops' (\d+)th percentiles, summed, of the kept of (\d+) samples per "
                  r"T, each T in turn, from (\d+) "
                  r"default-heap process \(set aside: ((?:\d+(?: \(none kept: all feed\))?(?:, )?)+)\)",
                  said(bars))
    assert (int(m[1]), int(m[2]), int(m[3])) == (100 * res["estimators"]["process_quantile"],
                                                 dflt["sample_count"], dflt["processes_sampled"])
    assert [(int(n.split()[0]), "none kept" in n) for n in m[4].split(", ")] == [  # a T where none
        (r["samples_set_aside"], r["figures_from"] != "kept samples")  # was kept says all fed
        for r in res["sweep_default_heap"]]
    m = re.search(r"roofs: beta and pi the (\d+)th percentile of (\d+) and (\d+) repeats pooled as "
                  r"independent, each >= "
                  r"([\d.]+) ms(?:; a cache level's of (\d+))?", said(rings))
    cache_reps = [lv["repeats"] for k, lv in c["levels"].items() if k != "DRAM"]  # none: no caches
    assert [float(x) for x in m.groups() if x] == [
        100 * res["estimators"]["ceiling_quantile"], c["beta_repeats"], c["pi_repeats"],
        cfg["min_time_s"] * 1e3] + ([min(cache_reps)] if cache_reps else [])
    legend = " ".join(t.get_text() for t in rings.axes[0].get_legend().get_texts())
    assert "S and A never written" in legend
    # Each cache level with a roof of its own is in the legend, read back: whose copy (all CPUs:
    # the all-thread copy won), its rate, its working set.
    shift = {"KiB": 10, "MiB": 20}
    said_roofs = {m[1]: (m[2], int(m[3]), int(m[4]) << shift[m[5]], 1 << shift[m[5]])
                  for m in re.finditer(r"(\w+) roof, (all CPUs|one thread): (\d+) GB/s \((\d+) "
                                       r"([KM]iB) working set\)", legend)}
    roofs = {name: lv for name, lv in c["levels"].items()
             if name != "DRAM" and not (lv["same_roof_as_DRAM"] or lv["slower_than_larger"])}
    assert sorted(said_roofs) == sorted(roofs)
    for name, (who, rate, size, unit) in said_roofs.items():
        lv = roofs[name]
        assert who == {"all_cpus": "all CPUs", "1thread": "one thread"}[lv["GBps_from"]]
        assert rate == round(lv["GBps"]) and size <= lv["bytes"] < size + unit


def test_phase_1_s_ceilings_are_drawn_as_points_not_as_an_interval_of_this_run_s():
    """A run given beta and pi (--roofline, as tests/data's laptop-run) has no repeats of its own:
    no band of beta's interval, and a ridge of no interval."""
    res = json.loads((perf.REPO / "tests/data/laptop-run/results.json").read_text())
    fig = figure_of(perf.plot_roofline, res)
    legend = " ".join(t.get_text() for t in fig.axes[0].get_legend().get_texts())
    assert res["ceilings"]["source"] == "cli"
    assert "beta's interval" not in legend and "(--roofline's beta and pi: no interval)" in legend
    measured = " ".join(t.get_text() for t in figure_of(perf.plot_roofline, synthetic.run())
                        .axes[0].get_legend().get_texts())
    assert "beta's interval, this run's repeats (96% coverage)" in measured
