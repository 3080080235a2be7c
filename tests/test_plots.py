"""Both pictures from a --quick run, and --replot on good and bad input."""
import json
import struct

from conftest import run_perf


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_quick_run_draws_both_pngs(quick_run):
    out, _, _ = quick_run
    for name in ("perf.png", "roofline.png"):
        w, h = png_size(out / name)
        assert w >= 1000 and h >= 500, (name, w, h)


def test_replot_redraws_from_results_alone(quick_run, tmp_path):
    out, res, _ = quick_run
    (tmp_path / "results.json").write_text(json.dumps(res))
    proc = run_perf("--replot", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["perf.png", "results.json",
                                                          "roofline.png"]
    assert png_size(tmp_path / "perf.png") == png_size(out / "perf.png")


def test_replot_bad_input_one_line_exit_2(tmp_path):
    cases = {"missing": None, "corrupt": "{not json", "wrong": '{"sweep": []}',
             "partial": '{"sweep": [{"T": 64, "ops": {}}], "sweep_default_heap": []}'}
    for name, text in cases.items():
        d = tmp_path / name
        d.mkdir()
        (d / "perf.png").write_bytes(b"earlier")
        if text is not None:
            (d / "results.json").write_text(text)
        proc = run_perf("--replot", "--out", str(d))
        assert proc.returncode == 2, name
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
        assert (d / "perf.png").read_bytes() == b"earlier"
        assert sorted(p.name for p in d.iterdir()) == ["perf.png"] + (
            [] if text is None else ["results.json"])
