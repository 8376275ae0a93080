"""The generated models follow openapi.json; the hand-written parts agree with them."""

from __future__ import annotations

import inspect
import json
import subprocess
import typing

from shelfapi import ERROR_CLASSES, PRICE_CSV_COLUMNS, AsyncClient, Client, PriceRow, models

from .conftest import ROOT

DOCUMENT = json.loads((ROOT / "openapi.json").read_text(encoding="utf-8"))


def test_models_py_is_what_openapi_json_generates() -> None:
    result = subprocess.run(
        ["node", "--import", "tsx", "clients/python/scripts/generate-models.ts", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, f"models.py is stale: run `npm run generate:python`\n{result.stdout}{result.stderr}"


def snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def test_one_method_per_operation_named_after_its_operation_id_with_its_query_parameters() -> None:
    for path, item in DOCUMENT["paths"].items():
        operation = item["get"]
        name = snake(operation["operationId"])
        for cls in (Client, AsyncClient):
            method = getattr(cls, name, None)
            assert method is not None, f"{cls.__name__}.{name} for {path}"
            parameters = [p for p in inspect.signature(method).parameters if p != "self"]
            documented = [snake(p["name"]) for p in operation.get("parameters", []) if p["in"] in ("query", "path")]
            assert sorted(parameters) == sorted(documented), f"{cls.__name__}.{name}"
            if "limit" in documented:
                iterator = getattr(cls, f"iter_{name}")
                assert sorted(p for p in inspect.signature(iterator).parameters if p != "self") == sorted(documented)


def test_every_documented_error_code_has_its_class() -> None:
    assert set(ERROR_CLASSES) == set(models.ERROR_CODES)
    for code, cls in ERROR_CLASSES.items():
        assert cls.__name__.replace("Error", "").lower() == code.replace("_", "") or code == "server_error"


def test_the_export_columns_are_the_price_rows_fields() -> None:
    assert PRICE_CSV_COLUMNS == tuple(typing.get_type_hints(PriceRow))
    description = DOCUMENT["paths"]["/developer/v1/prices/export.csv"]["get"]["responses"]["200"]["content"]["text/csv"]["schema"]["description"]
    assert description == "Columns: " + ",".join(PRICE_CSV_COLUMNS)
