"""Credentials given as Beam options are used, never recorded.

Beam takes credentials as pipeline options (`s3_secret_access_key`, `s3_session_token`,
`azure_connection_string`, ...). kflow passes them to the Beam pipelines that need them, but every record it
writes holds `***` in their place: `run.json` (the config's `beam` and `orchestration` options, the
components' `beam_args`), hence `kflow show`, `kflow runs` and `kflow diff`. `kflow compile` refuses them
(a compiled constant is readable by everyone who can read the pipeline or its runs): give them to the tasks as
environment variables from a Kubernetes Secret instead.

An option is a credential when its name holds one of CREDENTIAL_WORDS: secret, token, password, passwd,
credential, connection_string, or key as a word of its own (`s3_access_key_id`, `api_key`; not `monkey`).
"""

from __future__ import annotations

import re
from typing import Any

CREDENTIAL_WORDS = ("secret", "token", "password", "passwd", "credential", "connection_string", "key")
_CREDENTIAL = re.compile(r"secret|token|password|passwd|credential|connection_string|(?:^|[_-])key(?:$|[_-])", re.I)
REDACTED = "***"
OPTION_SECTIONS = ("beam", "orchestration")  # the config sections whose options are Beam options


def is_credential(name: str) -> bool:
    return bool(_CREDENTIAL.search(name.lstrip("-")))


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
        redacted.append(arg)
    return redacted


def redact_options(options: dict[str, Any]) -> dict[str, Any]:
    return {name: REDACTED if is_credential(name) else value for name, value in options.items()}


def redact_record(data: dict[str, Any]) -> dict[str, Any]:
    """A run record (run.json) with the credentials among its Beam options and arguments replaced."""
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
    return data


def credential_fields(config: Any) -> list[str]:
    """The config fields that hold credentials (`beam.options.s3_secret_access_key`), which must not be compiled."""
    return [
        f"{section}.options.{name}"
        for section in OPTION_SECTIONS
        for name in sorted((getattr(config, section, None) or {}).get("options", {}))
        if is_credential(name)
    ]
