"""A password inside a URL is a secret wherever the URL appears: `tracking.mlflow.uri=http://alice:PW@host` and a Beam
option's value `https://KEY:PW@minio` are used, but every record (run.json), every printed line and what MLflow
is sent hold `***` for the userinfo, and `kflow compile` refuses them, naming the fields (pipeline/dsl/secrets.py)."""

import pytest

from kflow.pipeline.dsl.secrets import redact_config, redact_urls
from kflow.pipeline.runners.mlflow_tracking import flat_params
from tests.conftest import REPO
from tests.reliability.test_secrets import files_holding

DEMO = REPO / "pipeline" / "configs" / "demo.yaml"
PLANTED = "PLANTED-URL-9d41a7"  # the passwords, to grep for


def settings(mlflow_uri: str) -> list[str]:
    return [
        "--set", f"tracking.mlflow={{uri: '{mlflow_uri}', experiment: url-secrets, timeout: 5}}",
        "--set", f"beam.options.s3_endpoint_url=https://KEYID:{PLANTED}-b@minio.invalid:9000",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("http://alice:S3cretPW@host:5000", "http://***@host:5000"),
        ("https://KEY:se@cr@et@minio:9000/bucket?x=y@z", "https://***@minio:9000/bucket?x=y@z"),
        ("--s3_endpoint_url=https://k:s@h", "--s3_endpoint_url=https://***@h"),
        ("ssh://git@host/repo and http://host/a@b", "ssh://***@host/repo and http://host/a@b"),
        ("http://host:5000/no-user", "http://host:5000/no-user"),
    ],
)
def test_the_userinfo_of_every_url_is_redacted(text, redacted):
    assert redact_urls(text) == redacted


def test_mlflow_params_hold_no_password_in_a_url():
    options = {"s3_endpoint_url": f"https://K:{PLANTED}@m", "s3_secret_access_key": PLANTED}
    config = {"tracking": {"mlflow": {"uri": f"http://alice:{PLANTED}@h:5000"}}, "beam": {"options": options}}
    params = dict(flat_params(redact_config(config)))
    assert params["tracking.mlflow.uri"] == "http://***@h:5000"
    assert params["beam.options.s3_endpoint_url"] == "https://***@m"
    assert params["beam.options.s3_secret_access_key"] == "***"
    assert config["tracking"]["mlflow"]["uri"].endswith(f"{PLANTED}@h:5000")  # the run itself still uses it


@pytest.mark.slow  # ~12 s; make test redacts every URL (above) and plants a secret in test_secrets.py
def test_a_password_in_a_url_is_in_no_file_or_output_and_not_compiled(tmp_path, run_kflow):
    root = tmp_path / "runs"
    # A tracking server that is down (port 9 on loopback: nothing listens): the warning names the URL, redacted.
    result = run_kflow("run", DEMO, "--until", "ingest", "--pipeline-root", root,
                       *settings(f"http://alice:{PLANTED}-a@127.0.0.1:9"))  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    outputs = [result.stdout, result.stderr]
    assert "tracking: MLflow at http://***@127.0.0.1:9" in result.stderr
    (run,) = [path.parent for path in root.glob("demo/*/run.json")]
    for command in (["show", run], ["show", run, "--json"], ["runs", root]):
        shown = run_kflow(*command)
        assert shown.returncode == 0, shown.stderr
        outputs += [shown.stdout, shown.stderr]
    assert files_holding(tmp_path, PLANTED) == []
    assert not any(PLANTED in text for text in outputs)
    recorded = (run / "run.json").read_text()
    assert '"uri": "http://***@127.0.0.1:9"' in recorded and "https://***@minio.invalid:9000" in recorded

    compiled = run_kflow("compile", DEMO, "-o", tmp_path / "p.yaml", "--image", "kflow:1",
                         *settings(f"http://alice:{PLANTED}-a@mlflow:5000"))  # fmt: skip
    assert compiled.returncode == 2 and not (tmp_path / "p.yaml").exists()
    assert "tracking.mlflow.uri: a credential is not compiled into pipeline.yaml" in compiled.stderr
    assert "beam.options.s3_endpoint_url: a credential is not compiled" in compiled.stderr
    assert PLANTED not in compiled.stderr + compiled.stdout
