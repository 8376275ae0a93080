"""Typed Python client for the shelfapi Developer API.

    from shelfapi import Client

    with Client("shelf_live_...", base_url="http://127.0.0.1:8080") as shelf:
        for item in shelf.iter_catalogue(search="mario"):
            print(item["masterItemId"], item["name"])
"""

from ._core import RateLimit, RetryEvent
from ._csv import PRICE_CSV_COLUMNS, CsvSyntaxError
from .async_client import AsyncClient
from .client import Client
from .errors import *  # noqa: F403 (the errors' own __all__)
from .errors import __all__ as _errors
from .models import *  # noqa: F403 (the models' own __all__)
from .models import __all__ as _models

__version__ = "0.1.0"

__all__ = [
    "Client",
    "AsyncClient",
    "RateLimit",
    "RetryEvent",
    "PRICE_CSV_COLUMNS",
    "CsvSyntaxError",
    *_errors,
    *_models,
]
