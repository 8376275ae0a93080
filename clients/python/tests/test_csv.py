"""The export's CSV read in pieces cut anywhere gives the same rows as read whole; malformed input is refused."""

from __future__ import annotations

import pytest

from shelfapi import PRICE_CSV_COLUMNS, CsvSyntaxError, PriceRow
from shelfapi._csv import PriceRows

HEADER = ",".join(PRICE_CSV_COLUMNS) + "\r\n"
TEXT = (
    HEADER
    + '3,"Pokémon, ""Gold"" Edition\r\nLimited",item-3,Nintendo 64,game,100000000003,3.5,6,30.75,,,2026-11-01T00:00:00.000Z\r\n'
    + '4,Item 04,item-4,NES,game,100000000004,4.5,,41,,,2026-11-01T00:00:00.000Z\r\n'
    + '6,"""",item-6,NES,console,100000000006,,,,1,2.25,2026-11-01T00:00:00.000Z'  # no final line end
)


def read(pieces: list[str]) -> list[PriceRow]:
    rows = PriceRows()
    out = [row for piece in pieces for row in rows.push(piece)]
    return out + list(rows.end())


def test_rows_typed_as_prices_answers_them() -> None:
    rows = read([TEXT])
    assert [r["masterItemId"] for r in rows] == [3, 4, 6]
    assert rows[0]["name"] == 'Pokémon, "Gold" Edition\r\nLimited'
    assert (rows[0]["loose"], rows[0]["cib"], rows[0]["boxOnly"]) == (3.5, 6.0, None)
    assert rows[2]["name"] == '"' and rows[2]["manualOnly"] == 2.25 and rows[2]["loose"] is None


def test_any_cut_gives_the_same_rows() -> None:
    whole = read([TEXT])
    for cut in range(len(TEXT) + 1):
        assert read([TEXT[:cut], TEXT[cut:]]) == whole, cut
    assert read(list(TEXT)) == whole


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("masterItemId,name\r\n1,x\r\n", "header"),
        (HEADER + '1,"cut short', "quoted field"),
        (HEADER + "1,too,few\r\n", "fields"),
    ],
)
def test_malformed_input_is_refused(text: str, message: str) -> None:
    with pytest.raises(CsvSyntaxError, match=message):
        read([text])
