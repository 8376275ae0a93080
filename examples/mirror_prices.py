"""Mirrors the current prices into a SQLite table with the shelfapi Python client, in one request.

    SHELF_API_URL=http://127.0.0.1:8080 SHELF_API_KEY=shelf_live_... python examples/mirror_prices.py \
        [--db prices.sqlite] [--platform NES]

``SHELF_API_URL`` is the server (``--base-url`` overrides it; without either, http://127.0.0.1:8080).

It reads the CSV export (``export_prices``: every row of /prices in one request, one count against the
quota) and replaces the table's rows in one transaction: a reader of the database sees the previous
mirror or the new one, never half of each, and a run stopped by an error (or Ctrl-C) changes nothing.
Run it again whenever you like; ``mirrored_at`` in the ``mirror_runs`` table says when it last succeeded.

Limits: a ``429 rate_limited`` or a ``503`` is retried by the client after Retry-After; on ``429
quota_exceeded`` the script stops with a message, keeps the last mirror, and exits 75 (try again later).

Exit codes: 0 mirrored; 75 stopped by the monthly quota; 1 another API error, or no answer from the server
(the message names the address it tried); 2 usage.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from datetime import datetime, timezone

from shelfapi import Client, QuotaExceededError, ShelfApiError, ShelfError

EXIT_QUOTA = 75  # EX_TEMPFAIL: the conventional "temporary failure, try again later".

SCHEMA = """
CREATE TABLE IF NOT EXISTS prices (
    master_item_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    slug TEXT NOT NULL,
    platform TEXT NOT NULL,
    category TEXT NOT NULL,
    upc TEXT NOT NULL,
    loose REAL,
    cib REAL,
    new REAL,
    box_only REAL,
    manual_only REAL,
    scrape_date TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS mirror_runs (
    mirrored_at TEXT NOT NULL,
    platform TEXT,
    rows INTEGER NOT NULL
);
"""


def mirror(shelf: Client, db: sqlite3.Connection, platform: str | None) -> int:
    """Replaces the table's rows with the export's, all or nothing; returns how many there are."""
    rows = 0
    with db:  # one transaction: committed at the end, rolled back on any error
        db.execute("DELETE FROM prices")
        for row in shelf.export_prices(platform=platform):
            db.execute(
                "INSERT INTO prices VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    row["masterItemId"], row["name"], row["slug"], row["platform"], row["category"], row["upc"],
                    row["loose"], row["cib"], row["new"], row["boxOnly"], row["manualOnly"], row["scrapeDate"],
                ),
            )  # fmt: skip
            rows += 1
        db.execute(
            "INSERT INTO mirror_runs VALUES (?, ?, ?)",
            (datetime.now(timezone.utc).isoformat(timespec="seconds"), platform, rows),
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Mirror shelfapi prices into SQLite.")
    parser.add_argument("--db", default="prices.sqlite")
    parser.add_argument("--base-url", default=os.environ.get("SHELF_API_URL", "http://127.0.0.1:8080"))
    parser.add_argument("--platform", default=None, help="only this platform (case-insensitive)")
    args = parser.parse_args(argv)
    # The key comes from the environment, never the command line, where it would land in shell history.
    key = os.environ.get("SHELF_API_KEY", "")
    if key == "":
        print("mirror_prices: set SHELF_API_KEY", file=sys.stderr)
        return 2

    db = sqlite3.connect(args.db)
    try:
        db.executescript(SCHEMA)
        with Client(key, args.base_url) as shelf:
            rows = mirror(shelf, db, args.platform)
    except QuotaExceededError as error:
        print(
            f"mirror_prices: the monthly quota is used up (resets in {error.retry_after} s); "
            f"the last mirror is kept. Request id {error.request_id}",
            file=sys.stderr,
        )
        return EXIT_QUOTA
    except ShelfApiError as error:
        print(f"mirror_prices: {error.status} {error.code}: {error.message} (request id {error.request_id})", file=sys.stderr)
        return 1
    except ShelfError as error:
        # No answer at all (ShelfConnectionError) or none in time (ShelfTimeoutError): most often the wrong
        # address, so say which one was used and how to change it.
        print(f"mirror_prices: {error} (set SHELF_API_URL or --base-url to the server)", file=sys.stderr)
        return 1
    finally:
        db.close()
    print(f"mirrored {rows} prices into {args.db}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
