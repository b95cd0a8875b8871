"""Credentials given as Beam options are used, never recorded: in no file a run writes, in no output, never compiled."""

from tests.conftest import REPO

DEMO = REPO / "pipeline" / "configs" / "demo.yaml"
PLANTED = "PLANTED-3f9c2e71"  # what a secret looks like to grep for
SECRETS = [
    "--set", f"beam.options.s3_secret_access_key={PLANTED}-a",
    "--set", f"beam.options.s3_access_key_id={PLANTED}-b",
    "--set", f"orchestration.options.azure_connection_string={PLANTED}-c",
]  # fmt: skip


def files_holding(root, text: str) -> list[str]:
    return [str(path) for path in root.rglob("*") if path.is_file() and text.encode() in path.read_bytes()]


def test_a_planted_secret_is_in_no_file_or_output_of_a_run_show_diff_or_compile(tmp_path, run_kflow):
    root = tmp_path / "runs"
    outputs = []
    for _ in range(2):  # the second run reuses the first's ingest: both records, and a diff between them
        result = run_kflow("run", DEMO, "--until", "ingest", "--pipeline-root", root, *SECRETS)
        assert result.returncode == 0, result.stderr[-3000:]
        outputs += [result.stdout, result.stderr]
    runs = sorted(path.parent for path in root.glob("demo/*/run.json"))
    for command in (["show", runs[-1]], ["show", runs[-1], "--json"], ["runs", root], ["diff", *runs]):
        result = run_kflow(*command)
        assert result.returncode == 0, result.stderr
        outputs += [result.stdout, result.stderr]
    assert files_holding(tmp_path, PLANTED) == []
    assert not any(PLANTED in text for text in outputs)
    recorded = (runs[-1] / "run.json").read_text()
    assert '"s3_secret_access_key": "***"' in recorded and "--s3_access_key_id=***" in recorded  # recorded, hidden

    compiled = run_kflow("compile", DEMO, "-o", tmp_path / "p.yaml", "--image", "kflow:1", *SECRETS)
    assert compiled.returncode == 2 and not (tmp_path / "p.yaml").exists()
    assert "beam.options.s3_secret_access_key: a credential is not compiled into pipeline.yaml" in compiled.stderr
    assert "orchestration.options.azure_connection_string: a credential" in compiled.stderr
    assert PLANTED not in compiled.stderr + compiled.stdout
