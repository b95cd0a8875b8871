"""`kflow validate` refuses strategy settings that cannot run, naming the field and why (exit 2)."""

from tests.conftest import REPO

CONFIGS = REPO / "pipeline" / "configs"


def test_quora_on_a_jax_strategy_is_refused_with_the_reason(run_kflow):
    result = run_kflow("validate", CONFIGS / "quora.yaml", "--set", "trainer.strategy=keras_data_parallel")
    assert result.returncode == 2
    assert "trainer.strategy: keras_data_parallel trains on jax, where quora cannot" in result.stderr
    assert "TextVectorization" in result.stderr


def test_a_sidecar_evaluator_without_checkpoints_to_follow_is_refused(run_kflow):
    result = run_kflow("validate", CONFIGS / "demo.yaml", "--set", "trainer.sidecar_evaluator=true")
    assert result.returncode == 2
    assert "trainer.sidecar_evaluator: strategy default has no sidecar evaluator" in result.stderr


def test_a_layout_map_naming_an_axis_outside_the_mesh_is_refused(run_kflow):
    result = run_kflow(
        "validate", CONFIGS / "mnist.yaml", "--set", "trainer.strategy=keras_model_parallel",
        "--set", 'trainer.layout_map={"probabilities/kernel": ["model", "tensor"]}',
    )  # fmt: skip
    assert result.returncode == 2
    assert "tensor" in result.stderr and "layout_map" in result.stderr


def test_several_steps_per_execution_in_the_explicit_jax_loop_are_refused(run_kflow):
    result = run_kflow(
        "validate", CONFIGS / "demo.yaml", "--set", "trainer.strategy=jax_data_parallel",
        "--set", "trainer.steps_per_execution=4",
    )  # fmt: skip
    assert result.returncode == 2
    assert "trainer.steps_per_execution: strategy jax_data_parallel trains one step per call" in result.stderr
    for strategy in ("default", "parameter_server"):  # model.fit, the custom loop
        taken = run_kflow(
            "validate", CONFIGS / "demo.yaml", "--set", f"trainer.strategy={strategy}",
            "--set", "trainer.steps_per_execution=4",
        )  # fmt: skip
        assert taken.returncode == 0, taken.stderr
