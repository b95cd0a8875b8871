"""bench/guides: every guide has its script and its kflow config, the configs are valid, the guides' models are the
configs' models, the Quora script splits as kflow's ingest does, and run.py's table adds up. No training, except
the smoke run marked slow."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kflow.pipeline.app.config_checks import check_config
from kflow.pipeline.dsl.config import load_config

GUIDES_DIR = Path(__file__).resolve().parents[2] / "bench" / "guides"


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


run = _load(GUIDES_DIR / "run.py", "bench_guides_run")


def _script(name: str):
    """A guide script as a module: its functions, without running its main (nor setting its backend)."""
    return _load(GUIDES_DIR / f"{name}.py", f"bench_guides_{name}")


def _module_model(config_path: Path):
    """The model a config's trainer.module builds, for MNIST (num_classes 10)."""
    source = Path(load_config(config_path).trainer.module)
    return _load(source, f"bench_guides_module_{source.stem}").build_model(None, {"num_classes": 10})


def test_the_five_guides_each_have_a_script_and_a_config():
    assert set(run.GUIDES) == {
        "jax_mnist",
        "mirrored_mnist",
        "keras_data_parallel",
        "bert_mlm_wikitext2",
        "quora_classifier",
    }
    for guide in run.GUIDES.values():
        assert guide.script.is_file(), guide.script
        assert guide.config.is_file(), guide.config
        assert guide.config.read_text().startswith("# Guide "), f"{guide.config} says what differs at its top"


# Each guide's strategy in its config, and its replicas: 2, where the guides use the GPUs of one machine.
STRATEGIES = {
    "jax_mnist": ("jax_data_parallel", 2),
    "mirrored_mnist": ("mirrored", 2),
    "keras_data_parallel": ("keras_data_parallel", 2),
    "bert_mlm_wikitext2": ("mirrored", 2),
    "quora_classifier": ("mirrored", 2),
}


@pytest.mark.parametrize("name", sorted(run.GUIDES))
def test_each_config_passes_kflow_validate(name):
    guide = run.GUIDES[name]
    config = load_config(guide.config)
    source = config.data.source.path
    if source and not (guide.config.parent / source).exists():  # validate checks a file source's path
        pytest.skip(f"{name}'s data {source} is not here (../shared/datasets, see its README.md)")
    check_config(config)  # `kflow validate`'s checks: raises a ConfigError listing every problem
    assert config.name == guide.pipeline()
    assert config.evaluator.split == "test"
    strategy, replicas = STRATEGIES[name]
    assert config.trainer.strategy == strategy
    processes = config.trainer.workers if strategy != "mirrored" else 1
    assert processes * (config.trainer.devices or 1) == replicas


@pytest.mark.parametrize(
    ("name", "build"),
    [("jax_mnist", "get_model"), ("mirrored_mnist", "get_compiled_model"), ("keras_data_parallel", "get_model")],
)
def test_the_mnist_scripts_train_the_model_their_config_trains(name, build):
    guide_model = getattr(_script(name), build)()
    kflow_model = _module_model(run.GUIDES[name].config)
    assert guide_model.count_params() == kflow_model.count_params()

    def weighted(model):
        """The layers that hold weights, in order, and their weights' shapes."""
        return [
            (type(layer).__name__, [tuple(w.shape) for w in layer.weights]) for layer in model.layers if layer.weights
        ]

    assert weighted(guide_model) == weighted(kflow_model)


def test_the_bert_script_builds_the_configs_bert_tiny():
    from kflow.components.models.bert_mlm import build_bert_mlm

    script = _script("bert_mlm_wikitext2")
    options = load_config(run.GUIDES["bert_mlm_wikitext2"].config).trainer.model_options
    vocabulary = script.RESERVED_TOKENS + [f"word{index}" for index in range(995)]
    guide_model = script.build_masked_lm(vocabulary)
    kflow_model = build_bert_mlm(
        vocabulary_size=len(vocabulary),
        sequence_length=options["sequence_length"],
        **{key: options[key] for key in ("num_layers", "hidden_dim", "num_heads", "intermediate_dim", "dropout")},
    )
    assert guide_model.backbone.count_params() == kflow_model.backbone.count_params()
    assert options["vocabulary_size"] == script.BERT_TINY["vocabulary_size"]
    preprocessor = guide_model.preprocessor
    assert (preprocessor.sequence_length, preprocessor.mask_selection_length) == (
        options["sequence_length"],
        options["mask_selection_length"],
    )
    assert preprocessor.mask_selection_rate == options["mask_selection_rate"]


def test_the_quora_script_splits_as_kflows_ingest():
    from kflow.components.ingest.split_plan import StratifiedPlan

    script = _script("quora_classifier")
    rows = [(f"{index:020x}", f"question {index}", int(index % 13 == 0)) for index in range(1000)]
    splits = script.stratified_split(rows)
    cuts = StratifiedPlan(dict(script.SPLIT))([(qid, str(label)) for qid, _, label in rows])
    for name, chosen in splits.items():
        assert {qid for qid, _, _ in chosen} == {qid for qid, _, label in rows if cuts(qid, str(label)) == name}
    assert sorted(len(chosen) for chosen in splits.values()) == [100, 100, 800]


def test_the_quora_scripts_roc_auc_is_kflows():
    import numpy as np

    from kflow.components.datasets.formulas import roc_auc

    script = _script("quora_classifier")
    labels = np.array([0, 0, 1, 1, 0, 1, 0, 0, 1, 0])
    scores = np.array([0.1, 0.4, 0.35, 0.8, 0.4, 0.4, 0.2, 0.9, 0.7, 0.05])  # ties across the classes
    assert script.roc_auc(labels, scores) == pytest.approx(roc_auc(labels, scores))


def _round(guide_wall, guide_train, guide_speed, guide_value, cold_wall, cold_train, cold_speed, cold_value, cached):
    return {
        "guide": {"wall_s": guide_wall, "train_s": guide_train, "examples_per_s": guide_speed, "value": guide_value},
        "kflow_cold": {"wall_s": cold_wall, "train_s": cold_train, "examples_per_s": cold_speed, "value": cold_value},
        "kflow_cached": {"wall_s": cached, "components": {"ingest": "cached", "train": "cached"}},
    }


def test_the_summary_takes_medians_and_the_median_of_each_rounds_ratios():
    rounds = [
        _round(10.0, 5.0, 100.0, 0.90, 30.0, 4.0, 125.0, 0.91, 2.0),
        _round(20.0, 8.0, 50.0, 0.92, 30.0, 9.0, 60.0, 0.93, 3.0),
        _round(12.0, 6.0, 80.0, 0.95, 48.0, 6.0, 40.0, 0.89, 6.0),
    ]
    summary = run.summarise(rounds)
    assert summary["rounds"] == 3
    assert summary["not_all_cached"] == 0
    assert summary["wall_s"] == {"guide": 12.0, "kflow_cold": 30.0, "kflow_cached": 3.0}
    assert summary["train_s"] == {"guide": 6.0, "kflow_cold": 6.0}
    assert summary["outside_s"] == {"guide": 6.0, "kflow_cold": 26.0}  # walls less training: 5, 12, 6; 26, 21, 42
    assert summary["examples_per_s"] == {"guide": 80.0, "kflow_cold": 60.0}
    assert summary["value"] == {"guide": 0.92, "kflow_cold": 0.91}
    ratios = summary["ratios"]
    # Each round's own ratio, then their median: speed 1.25, 1.2, 0.5; walls 3.0, 1.5, 4.0; cached 0.2, 0.15, 0.5.
    assert ratios["examples_per_s kflow/guide"] == pytest.approx(1.2)
    assert ratios["train_s kflow/guide"] == pytest.approx(1.0)  # 0.8, 1.125, 1.0
    assert ratios["wall kflow cold/guide"] == pytest.approx(3.0)
    assert ratios["wall kflow cached/guide"] == pytest.approx(0.2)
    assert ratios["outside training kflow/guide"] == pytest.approx(5.2)  # 5.2, 1.75, 7.0

    table = run.format_table(run.GUIDES["mirrored_mnist"], summary)
    lines = table.splitlines()
    assert lines[0].startswith("mirrored_mnist: 004")
    assert lines[1] == "  medians of 3 round(s)"
    assert lines[3].split() == ["wall", "(s)", "12.0", "30.0", "3.0"]
    assert lines[4].split() == ["training", "phase", "(s)", "6.0", "6.0"]
    assert lines[5].split() == ["outside", "training", "(s)", "6.0", "26.0"]
    assert lines[6].split() == ["examples/s", "80", "60"]
    assert lines[7].split() == ["test", "accuracy", "0.9200", "0.9100"]
    ratio_lines = {" ".join(line.split()[:-1]): line.split()[-1] for line in lines[9:]}
    assert ratio_lines == {
        "examples_per_s kflow/guide": "1.20",
        "train_s kflow/guide": "1.00",
        "wall kflow cold/guide": "3.00",
        "outside training kflow/guide": "5.20",
        "wall kflow cached/guide": "0.20",
    }
    assert lines[8] == "  ratios (median of the rounds' own):"
    assert "note:" not in table


def test_the_table_says_when_the_second_kflow_run_was_not_all_cached():
    rounds = [_round(10.0, 5.0, 100.0, 0.9, 30.0, 4.0, 125.0, 0.9, 25.0)]
    rounds[0]["kflow_cached"]["components"]["train"] = "succeeded"
    summary = run.summarise(rounds)
    assert summary["not_all_cached"] == 1
    assert "note: in 1 round(s) the second kflow run re-ran components" in run.format_table(
        run.GUIDES["jax_mnist"], summary
    )


def test_quick_runs_cut_the_script_and_the_config_alike(tmp_path):
    guide = run.GUIDES["bert_mlm_wikitext2"]
    cut = run.cuts(guide, quick=True)
    script = run.script_command(guide, tmp_path, cut)
    kflow = run.kflow_command(guide, tmp_path, cut, root=tmp_path / "runs")
    assert script[script.index("--epochs") + 1] == "1" and script[script.index("--max-records") + 1] == "1500"
    assert "trainer.epochs=1" in kflow and "data.source.max_records=1500" in kflow
    assert f"data.source.path={tmp_path / 'wikitext-2'}" in kflow
    assert "--epochs" not in run.script_command(guide, tmp_path, run.cuts(guide, quick=False))


def test_a_shorter_pair_cuts_both_sides_alike_over_quick(tmp_path):
    guide = run.GUIDES["bert_mlm_wikitext2"]
    cut = run.cuts(guide, quick=True, epochs=2, max_records=None)
    assert cut == {"epochs": 2, "max_records": 1500}
    cut = run.cuts(guide, quick=False, epochs=None, max_records=3000)
    script, kflow = run.script_command(guide, tmp_path, cut), run.kflow_command(guide, tmp_path, cut, tmp_path)
    assert script[script.index("--max-records") + 1] == "3000" and "--epochs" not in script
    assert "data.source.max_records=3000" in kflow and not any(part.startswith("trainer.epochs") for part in kflow)


def test_kflow_figures_come_from_history_and_metrics(tmp_path):
    (tmp_path / "train" / "model_run").mkdir(parents=True)
    (tmp_path / "evaluate" / "evaluation").mkdir(parents=True)
    history = {"train_seconds": 12.5, "examples_per_second": 400.0, "epochs": 2, "examples_trained": 5000}
    (tmp_path / "train" / "model_run" / "history.json").write_text(json.dumps(history))
    (tmp_path / "evaluate" / "evaluation" / "metrics.json").write_text(json.dumps({"accuracy": 0.97, "loss": 0.1}))
    figures = run.kflow_figures(tmp_path, "accuracy")
    assert (figures["train_s"], figures["examples_per_s"], figures["value"]) == (12.5, 400.0, 0.97)


@pytest.mark.slow
@pytest.mark.real_data
def test_a_quick_round_of_one_guide_runs_end_to_end(tmp_path):
    from tests.conftest import shared_dataset

    shared_dataset("mnist")
    result = subprocess.run(
        [
            sys.executable,
            str(GUIDES_DIR / "run.py"),
            "--quick",
            "--guides",
            "mirrored_mnist",
            "--rounds",
            "1",
            "--json",
            str(tmp_path / "rounds.json"),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "mirrored_mnist: 004" in result.stdout
    rounds = json.loads((tmp_path / "rounds.json").read_text())["rounds"]["mirrored_mnist"]
    assert 0 <= rounds[0]["guide"]["value"] <= 1 and 0 <= rounds[0]["kflow_cold"]["value"] <= 1


def test_utilisation_is_each_sides_median_examples_per_second_times_the_flops_over_the_peak():
    rounds = [
        _round(10.0, 5.0, 100.0, 0.9, 30.0, 4.0, 125.0, 0.9, 2.0),
        _round(10.0, 5.0, 300.0, 0.9, 30.0, 4.0, 75.0, 0.9, 2.0),
    ]
    summary = run.summarise(rounds)  # examples/s medians: guide 200, kflow 100
    same = {"guide": 5e6, "kflow": 5e6}
    used = run.utilisation(summary, training_flops=same, peak_flops=4e11)
    assert used == {"guide": pytest.approx(200 * 5e6 / 4e11), "kflow_cold": pytest.approx(100 * 5e6 / 4e11)}
    assert run.utilisation(summary, None, 4e11) is None and run.utilisation(summary, same, None) is None
    summary.update(utilisation=used, training_flops=same, peak_flops=4e11)
    lines = run.format_table(run.GUIDES["jax_mnist"], summary).splitlines()
    assert lines[1].endswith("float32 matmul peak 400 GFLOP/s")
    assert [line.split()[-2:] for line in lines if line.strip().startswith("float32 peak used")] == [["0.25%", "0.12%"]]
    assert [line.split()[-1] for line in lines if line.strip().startswith("training MFLOP")] == ["same)"]
    # Where kflow cuts its batches to their lines (the masked LM), each side is counted at the shapes it trains on.
    cut = {"guide": 5e6, "kflow": 2e6}
    used = run.utilisation(summary, training_flops=cut, peak_flops=4e11)
    assert used["kflow_cold"] == pytest.approx(100 * 2e6 / 4e11) and used["guide"] == pytest.approx(200 * 5e6 / 4e11)
    summary.update(utilisation=used, training_flops=cut)
    lines = run.format_table(run.GUIDES["jax_mnist"], summary).splitlines()
    assert [line.split()[-2:] for line in lines if line.strip().startswith("training MFLOP")] == [["5", "2"]]
