"""The Python module against the command line it wraps: same documents, typed errors."""
import json
import os
import subprocess

import pytest

import projector

PROJECT = os.environ.get("PROJECTOR_EXE", "")
CASES = os.environ.get("PROJECTOR_CALIBRATION", "")


def test_project_matches_the_command_line_json():
    r = projector.project(model="llama3.1-8b", gpu_arch="h100-sxm", num_gpus=8, seq_len=4096,
                          global_batch=16)
    cli = json.loads(subprocess.run(
        [PROJECT, "--model", "llama3.1-8b", "--gpu-arch", "h100-sxm", "--num-gpus", "8",
         "--seq-len", "4096", "--global-batch", "16", "--format", "json"],
        check=True, capture_output=True, text=True).stdout)
    assert r.to_dict() == cli
    assert isinstance(r, projector.Projection)
    assert r.tokens_per_s_per_gpu == cli["tokens_per_s_per_gpu"]
    assert isinstance(r.fits_in_memory, bool)
    assert r.peak_memory_gib == cli["peak_memory_bytes"] / 2**30
    assert json.loads(r.to_json()) == cli
    assert "bottlenecks" in r


def test_sensitivity_rows_reproject_each_setting():
    r = projector.project(model="llama3.1-8b", gpu_arch="h100-sxm", num_gpus=8, seq_len=4096,
                          global_batch=16, sensitivity=True)
    settings = {row["setting"] for row in r.sensitivity}
    # DP 8, bf16, dense: graphs and the two gradient settings; no MoE, FP8 or TP row.
    assert settings == {"cuda_graphs", "overlap_grad_reduce", "grad_reduce_dtype"}
    graphs = next(row for row in r.sensitivity if row["setting"] == "cuda_graphs")
    with_graphs = projector.project(model="llama3.1-8b", gpu_arch="h100-sxm", num_gpus=8,
                                    seq_len=4096, global_batch=16, cuda_graphs=True)
    assert graphs["tokens_per_s_per_gpu"] == pytest.approx(with_graphs.tokens_per_s_per_gpu)
    assert graphs["flags"] == "--cuda-graphs"
    # False passes --sensitivity=false: a switch written off is off.
    off = projector.project(model="llama3.1-8b", gpu_arch="h100-sxm", num_gpus=8, seq_len=4096,
                            global_batch=16, sensitivity=False)
    assert "sensitivity" not in off


def test_switches_lists_and_dicts_become_flags():
    # A library model edited as a dict: Llama-3.1-8B cut to 4 layers.
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "models", "llama3.1-8b.json")) as f:
        model = json.load(f)
    model["name"] = "llama-4-layers"
    model["num_layers"] = 4
    r = projector.project(model=model, gpu_arch="h100-sxm", num_gpus=8, tp=2,
                          sequence_parallel=True, seq_len=2048, global_batch=8)
    full = projector.project(model="llama3.1-8b", gpu_arch="h100-sxm", num_gpus=8, tp=2,
                             sequence_parallel=True, seq_len=2048, global_batch=8)
    assert r.model == "llama-4-layers"
    assert "SP" in r.layout
    assert r.tokens_per_s_per_gpu > full.tokens_per_s_per_gpu


def test_search_records_feed_a_dataframe():
    s = projector.search(model="llama3.1-8b", gpu_arch="h100-sxm", num_gpus=8, seq_len=2048,
                         global_batch=64, tp_values=[1, 2], pp_values=[1])
    rows = s.records()
    assert len(rows) >= 1
    assert {"tp", "pp", "tokens_per_s_per_gpu"} <= set(rows[0])
    assert rows[0]["tokens_per_s_per_gpu"] >= rows[-1]["tokens_per_s_per_gpu"]
    assert isinstance(s, projector.SearchResult)
    assert s.best == s.layouts[0] and s.best["rank"] == 1
    assert s.best_command.startswith("project ")
    assert s.candidates_enumerated >= s.candidates_evaluated >= len(rows)
    assert sum(s.removed.values()) + len(rows) == s.candidates_enumerated


def test_serve_and_scale():
    r = projector.serve(model="llama3.1-8b", gpu_arch="h100-sxm", qps=4, num_requests=50)
    assert r.completed == 50
    assert isinstance(r.ttft_ms, projector.Latency)
    assert r.ttft_ms.p90 >= r.ttft_ms.p50 == r["ttft_ms"]["p50"]
    assert r.tpot_ms["p99"] >= r.tpot_ms.mean > 0
    s = projector.scale(num_gpus=[8, 16], model="llama3.1-8b", gpu_arch="h100-sxm", seq_len=2048,
                        global_batch=64, tp_values=[1, 2], pp_values=[1])
    assert [p["num_gpus"] for p in s.records()] == [8, 16]
    assert isinstance(s, projector.ScaleResult)
    assert [p.num_gpus for p in s.points] == [8, 16]
    assert all(p.found for p in s.points) and s.points[0].efficiency == 1.0
    assert s.breakdown_point is None or s.breakdown_point in (8, 16)
    assert s.serial_fraction >= 0


def test_validate_runs_the_cases_file():
    v = projector.validate(cases=CASES)
    assert v.summary["projected"] > 300
    assert isinstance(v, projector.ValidateResult)
    assert v.count == v.summary["count"] and 0 < v.median_abs_error_pct < 100
    assert 0 <= v.within_20_pct <= 100


def test_compare_across_gpus():
    c = projector.compare(model="llama3.1-8b", gpu_arch=["h100-sxm", "mi300x"], num_gpus=8,
                          seq_len=2048, global_batch=16)
    assert isinstance(c, projector.CompareResult)
    assert [side.gpu for side in c.sides] == ["h100-sxm", "mi300x"]
    assert isinstance(c.causes, list)


def test_bad_input_raises_input_error_with_the_flag():
    with pytest.raises(projector.InputError) as e:
        projector.project(model="llama3.1-8b", gpu_arch="h100-sxm", num_gpus=8, tp=3)
    assert e.value.field == "--tp" or "tp" in e.value.message
    with pytest.raises(projector.InputError) as e:
        projector.project(model="llama3.1-8b", seqlen=4096)
    assert "did you mean --seq-len" in e.value.message
    with pytest.raises(projector.InputError) as e:
        projector.serve(model="llama3.1-8b", gpu_arch="h100-sxm", qps=0)
    assert e.value.field == "--qps"


def test_a_bad_file_names_file_and_field(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"model": "llama3.1-8b", "gpu": "h100-sxm", "num_gpus": 8,'
                   ' "training": {"seq_len": -1}}')
    with pytest.raises(projector.InputError) as e:
        projector.project(scenario=str(bad))
    assert e.value.file is not None and e.value.file.endswith("bad.json")
    assert e.value.field is not None and e.value.field.startswith("/training")


def test_a_bad_yaml_file_names_line_and_column(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: llama3.1-8b\ngpu: h100-sxm\nnum_gpus: 8\ntraining:\n  seq_len: -1\n")
    with pytest.raises(projector.InputError) as e:
        projector.project(scenario=str(bad))
    assert e.value.file.endswith("bad.yaml")
    assert (e.value.line, e.value.column) == (5, 3)
    assert e.value.field == "/training/seq_len"


def test_network_route_and_high_level_of_detail():
    here = os.path.dirname(os.path.abspath(__file__))
    mesh = os.path.join(here, "..", "..", "networks", "mesh4x4.json")
    r = projector.network("route", network=mesh, from_=1, to=7)
    assert r.hop_count == 3  # XY routing on the 4x4 mesh: 1, 2, 3, 7
    assert [h["to"] for h in r.hops] == [2, 3, 7]
    high = projector.project(model="llama3.1-8b", gpu_arch="h100-sxm", num_gpus=16, pp=2,
                             seq_len=2048, global_batch=16, lod="high")
    assert high.lod_high["events"] > 0
    # Every GPU simulated, a slow pipeline link: the same step when nothing is slow.
    unfolded = projector.project(model="llama3.1-8b", gpu_arch="h100-sxm", num_gpus=16, pp=2,
                                 seq_len=2048, global_batch=16, lod="high", no_fold=True,
                                 slow_link="0:8:2", congestion="unaware")
    assert unfolded.lod_high["slow_link"]["carries"].startswith("the pipeline link")
    assert unfolded.lod_high["slow_link"]["step_time_without_s"] == pytest.approx(
        high.lod_high["step_time_s"], rel=1e-9)
    with pytest.raises(projector.InputError) as e:
        projector.project(model="llama3.1-8b", gpu_arch="h100-sxm", num_gpus=16, tp=2,
                          lod="high", slow_link="0:3:2")
    assert e.value.field == "--slow-link"


def test_serve_with_a_shared_prefix_cached():
    kw = dict(model="llama3.1-8b", gpu_arch="h100-sxm", qps=4, num_requests=40, input_len=256,
              output_len=8, shared_prefix_len=1024, prefix_groups=2)
    cached = projector.serve(prefix_caching=True, **kw)
    plain = projector.serve(**kw)
    assert cached.prefix_cache["hit_tokens"] == (40 - 2) * 1024
    assert plain.prefix_cache is None
    assert cached.ttft_ms.mean < plain.ttft_ms.mean


def test_estimate_convnet_projects_resnet50():
    r = projector.estimate_convnet(model="resnet50", gpu_arch="v100", batch=256, num_gpus=8)
    assert r["forward_macs_per_image"] == 4089184256
    assert r["parameters"] == 25557032
    assert r["images_per_s_per_gpu"] > 0
