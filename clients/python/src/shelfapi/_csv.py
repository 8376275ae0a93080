"""The price export's CSV (RFC 4180: CRLF line ends, fields quoted when they hold , " CR or LF, quotes
doubled) read as it arrives, into the same rows ``/prices`` answers. Names can hold commas, quotes and line
breaks, so the text is cut only where a record ends: at a line feed outside quotes. Memory stays at one
chunk of the download whatever the file's size."""

from __future__ import annotations

import csv
import io
from typing import Iterator

from .models import PriceRow

#: The export's columns, in order.
PRICE_CSV_COLUMNS: tuple[str, ...] = (
    "masterItemId", "name", "slug", "platform", "category", "upc",
    "loose", "cib", "new", "boxOnly", "manualOnly", "scrapeDate",
)  # fmt: skip
#: Columns holding a price (US dollars) or, empty, null.
MONEY_COLUMNS = frozenset({"loose", "cib", "new", "boxOnly", "manualOnly"})


class CsvSyntaxError(ValueError):
    """The export is not well-formed CSV (cut short, say), or its header is not the one this client knows."""


class RecordSplitter:
    """Cuts text arriving in arbitrary pieces after its last complete record. A line feed ends a record when
    the quotes before it are even in number: inside a quoted field they are odd (quotes in a field are doubled)."""

    def __init__(self) -> None:
        self._buffer = ""
        # How far the buffer has been scanned, and whether the quotes before that point are odd.
        self._scanned = 0
        self._odd = False

    def push(self, text: str) -> str:
        """The complete records so far (possibly ""), each with its line end."""
        buffer = self._buffer + text
        position, odd, cut = self._scanned, self._odd, -1
        while True:
            line_feed = buffer.find("\n", position)
            if line_feed == -1:
                break
            odd ^= buffer.count('"', position, line_feed) % 2 == 1
            position = line_feed + 1
            if not odd:
                cut = position
        if cut == -1:
            self._buffer, self._scanned, self._odd = buffer, position, odd
            return ""
        # At the cut the quotes were even, so the parity from there on is what it is at `position`.
        self._buffer, self._scanned, self._odd = buffer[cut:], position - cut, odd
        return buffer[:cut]

    def end(self) -> str:
        """The rest: a last record without its line end, or "" when the text ended with one."""
        rest = self._buffer
        if self._odd or rest.count('"') % 2 == 1:
            raise CsvSyntaxError("the export ended inside a quoted field (cut short?)")
        self._buffer, self._scanned, self._odd = "", 0, False
        return rest


def records(text: str) -> list[list[str]]:
    try:
        return list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error as error:
        raise CsvSyntaxError(str(error)) from error


def _money(text: str) -> float | None:
    return None if text == "" else float(text)


def price_row(fields: list[str]) -> PriceRow:
    """One record as ``/prices`` would answer it: numbers as numbers, an empty price as None."""
    if len(fields) != len(PRICE_CSV_COLUMNS):
        raise CsvSyntaxError(f"a record of {len(fields)} fields, expected {len(PRICE_CSV_COLUMNS)}: {fields!r}")
    (master_item_id, name, slug, platform, category, upc, loose, cib, new, box_only, manual_only, scrape_date) = fields
    return {
        "masterItemId": int(master_item_id),
        "name": name,
        "slug": slug,
        "platform": platform,
        "category": category,
        "upc": upc,
        "loose": _money(loose),
        "cib": _money(cib),
        "new": _money(new),
        "boxOnly": _money(box_only),
        "manualOnly": _money(manual_only),
        "scrapeDate": scrape_date,
    }


class PriceRows:
    """Turns text chunks of the export into rows; the header is checked, not yielded."""

    def __init__(self) -> None:
        self._splitter = RecordSplitter()
        self._header_seen = False

    def push(self, text: str) -> Iterator[PriceRow]:
        return self._rows(self._splitter.push(text))

    def end(self) -> Iterator[PriceRow]:
        yield from self._rows(self._splitter.end())
        if not self._header_seen:
            raise CsvSyntaxError("the export is empty: not even its header row")

    def _rows(self, text: str) -> Iterator[PriceRow]:
        if text == "":
            return
        for fields in records(text):
            if not self._header_seen:
                # Guessing which column is which would silently mislabel prices: refuse instead.
                if tuple(fields) != PRICE_CSV_COLUMNS:
                    raise CsvSyntaxError(f"the export's header is not the one this client knows: {','.join(fields)}")
                self._header_seen = True
                continue
            yield price_row(fields)
