/**
 * The SQLite triggers that keep the catalogue's FTS5 index (catalogue_fts) in step with catalogue_items.
 * Migration 0001 creates them; a bulk load drops the insert trigger for the load, indexes each batch at
 * once, and puts the same trigger back (src/load/bulk-insert.ts). The text must not change: SQLite keeps
 * it in sqlite_master as written.
 */
export const SQLITE_FTS_INSERT_TRIGGER = `create trigger catalogue_fts_insert after insert on catalogue_items begin
            insert into catalogue_fts(rowid, search_name) values (new.master_item_id, new.search_name); end`;
