"""Credentials given as Beam options are used, never recorded.

Beam takes credentials as pipeline options (`s3_secret_access_key`, `s3_session_token`,
`azure_connection_string`, ...). kflow passes them to the Beam pipelines that need them, but every record it
writes holds `***` in their place: `run.json` (the config's `beam` and `orchestration` options, the
components' `beam_args`), hence `kflow show`, `kflow runs` and `kflow diff`. `kflow compile` refuses them
(a compiled constant is readable by everyone who can read the pipeline or its runs): give them to the tasks as
environment variables from a Kubernetes Secret instead.

An option is a credential when its name holds one of CREDENTIAL_WORDS: secret, token, password, passwd,
credential, connection_string, or key as a word of its own (`s3_access_key_id`, `api_key`; not `monkey`).

A value is a credential, whatever its name, when it holds a URL with user information
(`http://alice:S3cretPW@host:5000`, `https://KEY:secret@minio:9000`, even `ssh://git@host`): the userinfo is what
a URL carries a password in. Records, logs and MLflow get the URL with its userinfo replaced
(`http://***@host:5000`: `redact_urls`); `kflow compile` refuses any config field that holds one, in any section
(`credential_fields`): give the credentials to the client as its own variables (MLFLOW_TRACKING_USERNAME and
MLFLOW_TRACKING_PASSWORD, AWS_ACCESS_KEY_ID, …) from a Kubernetes Secret.
"""

from __future__ import annotations

import copy
import re
from typing import Any

CREDENTIAL_WORDS = ("secret", "token", "password", "passwd", "credential", "connection_string", "key")
_CREDENTIAL = re.compile(r"secret|token|password|passwd|credential|connection_string|(?:^|[_-])key(?:$|[_-])", re.I)
REDACTED = "***"
OPTION_SECTIONS = ("beam", "orchestration")  # the config sections whose options are Beam options


# scheme://userinfo@: the userinfo runs to the last `@` before the host's end (`/`, `?`, `#`, a blank), so a
# password holding an unencoded `@` is hidden whole.
_URL_USERINFO = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s]*@")


def is_credential(name: str) -> bool:
    return bool(_CREDENTIAL.search(name.lstrip("-")))


def has_userinfo(text: str) -> bool:
    """Whether `text` holds a URL with user information (a user, and usually a password)."""
    return bool(_URL_USERINFO.search(text))


def redact_urls(text: str) -> str:
    """`text` with the userinfo of every URL in it replaced: `http://alice:pw@host` → `http://***@host`."""
    return _URL_USERINFO.sub(lambda match: f"{match[1]}{REDACTED}@", text)


def redact_values(value: Any) -> Any:
    """A copy of a JSON-like value whose every string has its URLs' userinfo replaced."""
    if isinstance(value, str):
        return redact_urls(value)
    if isinstance(value, dict):
        return {key: redact_values(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_values(item) for item in value]
    return value


def redact_args(args: list[Any]) -> list[Any]:
    """Beam arguments with every credential's value replaced: `--name=value` and `--name value` alike."""
    redacted, hide_next = [], False
    for arg in args:
        if hide_next:
            redacted.append(REDACTED)
            hide_next = False
            continue
        if isinstance(arg, str) and arg.startswith("--"):
            name, sep, _ = arg.partition("=")
            if is_credential(name):
                if sep:
                    arg = f"{name}={REDACTED}"
                else:
                    hide_next = True
        redacted.append(redact_urls(arg) if isinstance(arg, str) else arg)
    return redacted


def redact_options(options: dict[str, Any]) -> dict[str, Any]:
    return {name: REDACTED if is_credential(name) else redact_values(value) for name, value in options.items()}


def redact_record(data: dict[str, Any]) -> dict[str, Any]:
    """A run record (run.json) with the credentials among its Beam options and arguments replaced, and every URL's
    userinfo, wherever it is (tracking.mlflow.uri, a Beam option's value, a component's parameter)."""
    config = data.get("metadata", {}).get("config")
    if isinstance(config, dict):
        for section in OPTION_SECTIONS:
            options = (config.get(section) or {}).get("options")
            if isinstance(options, dict):
                config[section] = {**config[section], "options": redact_options(options)}
    for entry in data.get("components", {}).values():
        parameters = entry.get("parameters")
        if isinstance(parameters, dict):
            for name, value in parameters.items():
                if name.endswith("beam_args") and isinstance(value, list):
                    parameters[name] = redact_args(value)
    return redact_values(data)


def redact_config(config: dict[str, Any]) -> dict[str, Any]:
    """A copy of a config (as a dict) with its credentials replaced, by option name and by URL userinfo."""
    return redact_record({"metadata": {"config": copy.deepcopy(config)}})["metadata"]["config"]


def credential_fields(config: Any) -> list[str]:
    """The config fields that hold credentials, which must not be compiled: Beam options named as one
    (`beam.options.s3_secret_access_key`), and any field whose value holds a URL with userinfo
    (`tracking.mlflow.uri`, `beam.options.s3_endpoint_url`)."""
    whole = config.to_dict()
    named = [
        f"{section}.options.{name}"
        for section in OPTION_SECTIONS
        for name in sorted(whole[section]["options"])
        if is_credential(name)
    ]
    return named + [field for field in url_credential_fields(whole) if field not in named]


def url_credential_fields(value: Any, prefix: str = "") -> list[str]:
    """The dotted fields of a JSON-like config whose values hold a URL with userinfo."""
    if isinstance(value, str):
        return [prefix.rstrip(".")] if has_userinfo(value) else []
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in url_credential_fields(item, f"{prefix}{key}.")]
    if isinstance(value, (list, tuple)):
        return [found for index, item in enumerate(value) for found in url_credential_fields(item, f"{prefix}{index}.")]
    return []
