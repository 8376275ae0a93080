/**
 * A plain text table for terminals: columns padded to their widest cell. Numbers read best right-aligned
 * (their digits line up), so a column can be marked 'right'.
 */
export type Align = 'left' | 'right';

export function table(headers: string[], rows: string[][], align: readonly Align[] = []): string {
  const width = (s: string) => [...s].length;
  const widths = headers.map((h, i) => Math.max(width(h), ...rows.map((r) => width(r[i] ?? ''))));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => {
        const pad = ' '.repeat((widths[i] ?? 0) - width(c));
        return align[i] === 'right' ? pad + c : c + pad;
      })
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}
