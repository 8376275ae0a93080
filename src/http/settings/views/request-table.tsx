/**
 * A table of a key's requests, newest first, as key details' request log shows them: when, the method and
 * path, the status, the columns the log adds, the request id the client got (to find the request in its
 * own logs).
 */
import type { ComponentChildren, VNode } from 'preact';
import { TableScroll, Time } from './components.js';

/** What every request row has. */
interface RequestRow {
  at: string;
  method: string;
  path: string;
  status: number;
  requestId: string;
}

/** A column between Status and Request id: its heading, and its cell (a whole `<td>`) for a row. */
export interface RequestColumn<R> {
  heading: string;
  cell: (row: R) => VNode;
}

export function RequestTable<R extends RequestRow>({
  label,
  caption,
  rows,
  now,
  columns,
}: {
  label: string;
  caption: ComponentChildren;
  rows: readonly R[];
  now: number;
  columns: ReadonlyArray<RequestColumn<R>>;
}) {
  return (
    <TableScroll label={label}>
      <table class="requests">
        <caption class="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Request</th>
            <th scope="col">Status</th>
            {columns.map((c) => (
              <th scope="col">{c.heading}</th>
            ))}
            <th scope="col">Request id</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr>
              <td>
                {/* Relative, the exact UTC time its title and datetime: one line a request. */}
                <Time at={r.at} now={now} />
              </td>
              <td class="mono nowrap">
                {r.method} {r.path}
              </td>
              <td class="num">{r.status}</td>
              {columns.map((c) => c.cell(r))}
              <td class="mono small nowrap">{r.requestId}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}
