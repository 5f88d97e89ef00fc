"""JupyterLab-LSP finds gpulens through its entry point, the command it runs starts, and its
settings editor gets a schema of every setting the server reads."""

from __future__ import annotations

import subprocess
from importlib.metadata import entry_points
from typing import Any

import jsonschema
import pytest

from gpulens.lsp.settings import known_settings, parse_settings


def gpulens_spec() -> dict[str, Any]:
    (point,) = [e for e in entry_points(group="jupyter_lsp_spec_v1") if e.name == "gpulens"]
    return point.load()(None)


def test_entry_point_gives_a_spec_whose_command_starts_the_server() -> None:
    (point,) = [e for e in entry_points(group="jupyter_lsp_spec_v1") if e.name == "gpulens"]
    spec = point.load()(None)["gpulens"]
    assert spec["languages"] == ["python"]
    done = subprocess.run(
        [*spec["argv"], "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "stdio" in done.stdout


def test_the_spec_is_one_jupyter_lsp_accepts() -> None:
    schema = pytest.importorskip("jupyter_lsp.schema")
    schema.LANGUAGE_SERVER_SPEC_MAP.validate(gpulens_spec())


def test_the_settings_schema_lists_every_setting_the_server_reads() -> None:
    config = gpulens_spec()["gpulens"]["config_schema"]
    jsonschema.Draft7Validator.check_schema(config)
    properties = config["properties"]
    assert {name.removeprefix("gpulens.") for name in properties} == known_settings()
    for name, schema in properties.items():
        assert schema["description"], name
        assert "type" in schema, name
        # the default is a value of the setting's type, and one the server takes
        jsonschema.validate(schema["default"], schema)
        _, problems = parse_settings({name.removeprefix("gpulens."): schema["default"]})
        assert problems == [], name
