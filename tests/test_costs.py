"""The lab's FLOP and byte formulas, the thresholds and the roofline arithmetic, by hand."""
import json

import pytest

import perf


def test_cost_model_by_hand_T64():
    c = perf.op_cost(64, 64, 4)
    assert c["qkv_proj"] == (3 * 2 * 64 * 64 * 64, 3 * (4 * 64 * 64 + 4 * 64 * 64))  # 1572864, 98304
    assert c["qkv_proj"] == (1_572_864, 98_304)
    assert c["scores"] == (4 * 2 * 64 * 64 * 16, 4 * (8 * 64 * 16 + 4 * 64 * 64)) == (524_288, 98_304)
    assert c["softmax"] == (81_920, 131_072)
    assert c["av"] == c["scores"]
    assert c["out_proj"] == (524_288, 32_768)


def test_cost_model_by_hand_T512_and_lab_intensities():
    c = perf.op_cost(512, 64, 4)
    assert c["scores"] == (33_554_432, 4_456_448)
    assert c["softmax"] == (5_242_880, 8_388_608)
    assert c["qkv_proj"] == (12_582_912, 442_368)
    T, d, d_k = 512, 64, 16
    I = {op: f / b for op, (f, b) in c.items()}
    assert I["qkv_proj"] == pytest.approx(T * d / (2 * T + 2 * d))        # 28.44
    assert I["scores"] == pytest.approx(T * d_k / (4 * d_k + 2 * T))      # 7.53
    assert I["softmax"] == pytest.approx(0.625)
    assert I["out_proj"] == pytest.approx(I["qkv_proj"])


def test_thresholds_both_forms():
    # I_crit = 2, d_k = 16: formula T*16 > 2*(64 + 2T) -> T > 128/12; inequality 16T > 8(16+T) -> T > 16
    assert perf.threshold_T(16, 2.0, 2) == pytest.approx(128 / 12)
    assert perf.threshold_T(16, 2.0, 4) == pytest.approx(16)
    assert 16 * 16 > 4 * (16 + 16) * 2.0 - 1e-9 and not 15 * 16 > 4 * (16 + 15) * 2.0
    # I_crit = 5: the inequality's intensity tends to d_k/4 = 4 < 5, the formula's to 8 > 5
    assert perf.threshold_T(16, 5.0, 4) is None
    assert perf.threshold_T(16, 5.0, 2) == pytest.approx(4 * 16 * 5 / 6)
    # I_crit = 9 is above both asymptotes: memory-bound for every T
    assert perf.threshold_T(16, 9.0, 2) is None and perf.threshold_T(16, 8.0, 2) is None


CEILINGS = {"beta_peak_GBps": 20.0, "pi_peak_GFLOPS": 100.0, "ridge_range": [4.0, 6.0],
            "levels": {"L2": {"capacity_bytes": 1 << 20, "GBps": 100.0},
                       "L3": {"capacity_bytes": 32 << 20, "GBps": 50.0},
                       "DRAM": {"capacity_bytes": None, "GBps": 20.0}}}


def test_place_on_roofline_arithmetic():
    row = {"T": 64, "ops": {op: {"time_s": 1e-5} for op in perf.OPS}}
    row["ops"]["total"] = {"time_s": 6e-5}  # shares are of the five ops' sum, the stacked bar
    perf.place_on_roofline(row, 64, 4, CEILINGS)  # ridge 5 FLOP/byte, interval 4 to 6
    qkv, sm, sc = row["ops"]["qkv_proj"], row["ops"]["softmax"], row["ops"]["scores"]
    assert qkv["intensity"] == pytest.approx(16.0) and qkv["bound"] == "compute"
    assert qkv["gflops"] == pytest.approx(1_572_864 / 1e-5 / 1e9)
    assert qkv["attainable_gflops"] == 100.0
    assert sm["bound"] == "memory" and sm["attainable_gflops"] == pytest.approx(20 * 0.625)
    # scores at T=64: I = 5.33, inside the ridge's interval: too close to call
    assert sc["intensity"] == pytest.approx(64 * 16 / (64 + 128)) and sc["bound"] == "ridge"
    assert sm["time_share"] == pytest.approx(0.2)
    assert sum(row["ops"][op]["flop_share"] for op in perf.OPS) == pytest.approx(1)
    # Working sets at T=64: softmax 4 (5*4*64^2 + 64^2) = 344064 bytes fit the 1 MiB L2.
    assert sm["working_set_bytes"] == 344_064 and sm["level"] == "L2"
    assert sm["level_ceiling_gflops"] == pytest.approx(100 * 0.625)  # L2: 100 GB/s
    assert sm["level_bound"] == "memory" and sc["level_bound"] == "compute"  # L2 ridge 1.0


def caches(**sizes):
    return {"caches": {name: {"size": size, "shared_cpu_list": "0"} for name, size in sizes.items()}}


def test_copy_working_sets_fit_their_level_and_the_memory():
    # The lab's laptop: half of each data cache, and DRAM at 128 MiB, far past its 6 MiB L3.
    lap = perf.copy_levels(caches(L1d="32K", L1i="32K", L2="256K", L3="6144K"), quick=False)
    assert [(n, lv["bytes"]) for n, lv in lap.items()] == [
        ("L1d", 16 << 10), ("L2", 128 << 10), ("L3", 3 << 20), ("DRAM", 128 << 20)]
    assert lap["DRAM"]["past_llc"] is True
    # A 64 MiB L3: DRAM four times past it.
    assert perf.copy_levels(caches(L3="65536K"), quick=False)["DRAM"]["bytes"] == 256 << 20
    # A server's 480 MiB L3: four times past it would need 2 GiB. Every copy stays within
    # COPY_MAX_BYTES, and the DRAM copy says that it is not past the last level.
    srv = perf.copy_levels(caches(L1d="48K", L2="2048K", L3="491520K"), quick=False)
    assert srv["L3"]["bytes"] == 240 << 20 and srv["DRAM"]["bytes"] == perf.COPY_MAX_BYTES
    assert srv["DRAM"]["past_llc"] is False and perf.COPY_MAX_BYTES <= 256 << 20
    # No cache described: DRAM alone.
    assert list(perf.copy_levels({"caches": {}}, quick=False)) == ["DRAM"]


def test_beta_is_a_plateau_only_if_both_dram_sizes_agree():
    spec = {"levels": {"DRAM": {"capacity_bytes": None, "bytes": 256 << 20,
                                "check_bytes": 128 << 20}}, "threads": 2}

    def workers(main, check):  # one repeat per worker: one thread, all threads
        return [{"copy": {"DRAM": {"1": m / 2, "all": m}}, "copy_check": {"DRAM": {"1": c / 2, "all": c}},
                 "matmul": {"512": 100.0}, "dot": 1.0} for m, c in zip(main, check)]
    agree = perf.combine_ceilings(workers([30, 31, 32], [31, 33, 34]), spec)
    dram = agree["levels"]["DRAM"]
    assert dram["plateau"] is True and agree["beta_dram_GBps"] == 31
    assert agree["beta_range_GBps"] == [30, 32]  # the repeats at the main size alone
    # Tight repeats that do not overlap but agree within 10 %: still a plateau.
    assert perf.combine_ceilings(workers([31, 31, 31], [33, 33.5, 34]), spec)["levels"]["DRAM"]["plateau"]
    assert not perf.combine_ceilings(workers([31, 31, 31], [34.2, 34.5, 35]), spec)["levels"]["DRAM"]["plateau"]
    apart = perf.combine_ceilings(workers([30, 31, 32], [52, 54, 55]), spec)
    dram = apart["levels"]["DRAM"]
    assert dram["plateau"] is False and dram["GBps_check"] == 54
    # beta stays the main size's median; its interval spans both sizes
    assert apart["beta_dram_GBps"] == 31 and apart["beta_range_GBps"] == [30, 55]


def test_levels_and_the_lab_laptop():
    assert perf.level_of(1 << 20, CEILINGS["levels"]) == "L2"
    assert perf.level_of((1 << 20) + 1, CEILINGS["levels"]) == "L3"
    assert perf.level_of(33 << 20, CEILINGS["levels"]) == "DRAM"
    lap = perf.lab_laptop_levels([64, 128, 256, 512], 64, 4)
    # softmax: 4 (21 T^2) bytes against 6 MiB: 5.25 MiB at T=256 fits, 21 MiB at T=512 does not.
    assert lap["level_per_T"]["256"]["softmax"] == "L3" and lap["softmax_in_DRAM_at_T"] == [512]
    assert lap["softmax_spills_past_T"] == pytest.approx((6 * 2**20 / 84) ** 0.5)  # 273.7
    assert lap["level_per_T"]["64"]["qkv_proj"] == "L2"  # 4 (64*64 + 3*64*64 + 3*64*64) = 112 KiB


@pytest.mark.parametrize("doc,expect", [
    ({"beta_peak_GBps": 17.5, "pi_peak_GFLOPS": 250}, (17.5, 250.0)),
    ({"results_summary": {"beta_peak_GBps": 19, "pi_peak_GFLOPS": 240.5}}, (19.0, 240.5)),
])
def test_read_ceilings(tmp_path, doc, expect):
    f = tmp_path / "m.json"
    f.write_text(json.dumps(doc))
    c = perf.read_ceilings(f)
    assert (c["beta_peak_GBps"], c["pi_peak_GFLOPS"]) == expect


@pytest.mark.parametrize("text", ["{", "[]", '{"beta_peak_GBps": 10}',
                                  '{"beta_peak_GBps": -1, "pi_peak_GFLOPS": 5}',
                                  '{"beta_peak_GBps": "10", "pi_peak_GFLOPS": 5}'])
def test_read_ceilings_rejects(tmp_path, text):
    f = tmp_path / "m.json"
    f.write_text(text)
    with pytest.raises(perf.UsageError):
        perf.read_ceilings(f)
