"""No two texts of a picture overlap and none leaves the figure: the committed run, a --quick
run, a six-T run and a synthetic run with awkward values (the legend counts as one box)."""
import copy
import json

import matplotlib.pyplot as plt
import pytest
from matplotlib.text import Text

import perf
from conftest import EXP, run_perf


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
    for t in fig.findobj(Text):
        if t in inside or t in undrawn or not t.get_visible() or not t.get_text().strip():
            continue
        boxes.append((t.get_text(), t.get_window_extent(r)))
    return boxes


def assert_no_collisions(fig):
    boxes, W, H = text_boxes(fig), fig.bbox.width, fig.bbox.height
    for text, b in boxes:
        assert b.x0 >= -1 and b.y0 >= -1 and b.x1 <= W + 1 and b.y1 <= H + 1, f"{text!r} leaves the figure"
    for i, (t1, b1) in enumerate(boxes):
        for t2, b2 in boxes[i + 1:]:
            overlap_w = min(b1.x1, b2.x1) - max(b1.x0, b2.x0)
            overlap_h = min(b1.y1, b2.y1) - max(b1.y0, b2.y0)
            assert overlap_w <= 1 or overlap_h <= 1, f"{t1!r} overlaps {t2!r}"


@pytest.fixture(scope="module")
def six_T(tmp_path_factory):
    out = tmp_path_factory.mktemp("sixT")
    proc = run_perf("--quick", "--T", "64", "128", "256", "512", "1024", "2048",
                    "--repeats", "2", "--workers", "1", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return json.loads((out / "results.json").read_text())


def awkward(res):
    """Points on a ceiling, intensities off scale, beta equal to the one-thread copy and to the
    L3 copy, a DRAM copy with no plateau and not past the L3, a disturbed run with long reasons,
    a dominant op that changes along T."""
    res = copy.deepcopy(res)
    c = res["ceilings"]
    c["beta_dram_1thread_GBps"] = c["beta_peak_GBps"]
    c["levels"]["L3"]["GBps"] = c["beta_peak_GBps"]
    c["levels"]["DRAM"].update(past_llc=False, plateau=False, check_bytes=16 << 20,
                               GBps_check=1.8 * c["beta_peak_GBps"])  # the longest legend
    for r in res["sweep"]:
        for op in perf.OPS:
            o = r["ops"][op]
            o["gflops"] = o["attainable_gflops"]          # exactly on the roof
        r["ops"]["qkv_proj"]["intensity"] = 500.0         # off scale
        rest = sum(r["ops"][op]["time_share"] for op in ("qkv_proj", "av", "out_proj"))
        for op in ("qkv_proj", "av", "out_proj"):  # shares still add to 1
            r["ops"][op]["time_share"] *= 0.25 / rest
        r["ops"]["softmax"]["time_share"], r["ops"]["scores"]["time_share"] = 0.05, 0.70
    res["analysis"]["dominant_op_per_T"] = {str(r["T"]): "scores" for r in res["sweep"]}
    res["conditions"] = {"verdict": "disturbed", "reasons": [
        "other processes used 1.02 CPUs on average while the sweep ran (limit 0.25)",
        "the hypervisor took 3.1% of the CPU time (steal; limit 2%)"]}
    return res


@pytest.mark.parametrize("which", ["committed", "quick", "six_T", "awkward"])
def test_no_label_collides(which, quick_run, six_T):
    res = {"committed": lambda: json.loads((EXP / "results.json").read_text()),
           "quick": lambda: quick_run[1], "six_T": lambda: six_T,
           "awkward": lambda: awkward(six_T)}[which]()
    for plot in (perf.plot_perf, perf.plot_roofline):
        fig = plot(res)
        try:
            assert_no_collisions(fig)
        finally:
            plt.close(fig)
