/**
 * A small column chart of requests per day for `keys usage`: oldest day on the left, today on the right,
 * a few rows tall with eighth-block precision, the peak and 0 on the axis, a date under every seventh day
 * counted back from today (so weeks line up with today's weekday).
 *
 * Columns rather than one bar per line: the table above already gives a line per day with its number; the
 * chart is there to show the shape of the month at a glance, and a time series reads left to right.
 */

export interface DayCount {
  day: string; // YYYY-MM-DD
  requests: number;
}

export interface ChartOptions {
  /** Rows of bars (each row is eight steps high). */
  height?: number;
  /** More days than this are cut to the latest ones (default CHART_MAX_DAYS): the chart must fit a terminal. */
  maxDays?: number;
}

export const CHART_MAX_DAYS = 120;
const EIGHTHS = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
/** Up to this many days, a gap between columns: wider, and each day stands apart. */
const GAPPED_UP_TO = 60;

/** The chart's lines, for days given oldest first; empty when there are no days. */
export function usageChart(days: readonly DayCount[], options: ChartOptions = {}): string[] {
  const height = options.height ?? 5;
  const shown = days.slice(-(options.maxDays ?? CHART_MAX_DAYS));
  if (shown.length === 0) return [];
  const peak = Math.max(...shown.map((d) => d.requests));
  const step = shown.length <= GAPPED_UP_TO ? 2 : 1;
  const label = String(peak);
  const margin = label.length;
  // Heights in eighths of a row. A day with any request gets at least one eighth: a small day must not
  // look like a day with none.
  const eighths = shown.map((d) => (d.requests === 0 || peak === 0 ? 0 : Math.max(1, Math.round((d.requests / peak) * height * 8))));

  const lines: string[] = [];
  for (let row = height - 1; row >= 0; row--) {
    const cells = eighths.map((h) => EIGHTHS[Math.min(8, Math.max(0, h - row * 8))]!.padEnd(step));
    const axis = row === height - 1 ? label : '';
    lines.push(`${axis.padStart(margin)} ┤${cells.join('')}`.trimEnd());
  }
  lines.push(`${'0'.padStart(margin)} └${'─'.repeat(shown.length * step)}`);

  // Dates under the columns, every seventh day back from the newest, where they fit without touching.
  const ticks: string[] = [];
  let free = 0;
  const positions: Array<{ at: number; text: string }> = [];
  for (let i = shown.length - 1; i >= 0; i -= 7) positions.unshift({ at: i * step, text: shown[i]!.day.slice(5) });
  for (const { at, text } of positions) {
    if (at < free) continue;
    ticks.push(' '.repeat(at - free), text);
    free = at + text.length + 1;
    ticks.push(' ');
  }
  lines.push(`${' '.repeat(margin + 2)}${ticks.join('')}`.trimEnd());
  return lines;
}
