/**
 * Requests per day (or per hour) as a bar chart drawn on the server: a pure function from numbers to SVG, with a title
 * and description for assistive technology and a table of the same numbers beside it. Built with the same
 * escaping renderer as every view, so even the chart outputs no trusted markup.
 */
import { TableScroll } from './components.js';
import { formatCount, formatDay } from './format.js';

export interface ChartSeries {
  /** Shown in the legend and the table. */
  name: string;
  /** CSS class of the bars (the stylesheet picks the colour). */
  tone: string;
  /** One value per day, in the order of `days`. */
  values: readonly number[];
}

export interface BarChartProps {
  id: string;
  title: string;
  /** UTC days (or hours, `2026-11-24T08`, with unit 'hour'), oldest first. */
  days: readonly string[];
  series: readonly ChartSeries[];
  /** What one bar covers; a day unless said. */
  unit?: 'day' | 'hour';
}

/** Drawing units; the SVG stretches to its box, so labels are HTML beside it (never stretched text). */
const WIDTH = 600;
const HEIGHT = 200;

/** 1, 2 or 5 times a power of ten, at least `max`: a round top for the axis. */
export function niceCeiling(max: number): number {
  if (max <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 5, 10]) if (step * power >= max) return step * power;
  return 10 * power;
}

export function dayTotals(days: readonly string[], series: readonly ChartSeries[]): number[] {
  return days.map((_, i) => series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0));
}

/** A bar's label: `Nov 24`, or `Nov 24 08:00` for an hour. */
function periodLabel(period: string, unit: 'day' | 'hour'): string {
  return unit === 'hour' ? `${formatDay(period.slice(0, 10))} ${period.slice(11, 13)}:00` : formatDay(period);
}

export function BarChart({ id, title, days, series, unit = 'day' }: BarChartProps) {
  const totals = dayTotals(days, series);
  const total = totals.reduce((a, b) => a + b, 0);
  const top = niceCeiling(Math.max(0, ...totals));
  const slot = days.length === 0 ? WIDTH : WIDTH / days.length;
  const barW = Math.max(1, slot * 0.7);
  const y = (v: number) => HEIGHT - (v / top) * HEIGHT;
  const ticks = [top, top / 2, 0].filter(Number.isInteger);
  const busiest = totals.length === 0 ? 0 : Math.max(...totals);
  const first = days[0];
  const last = days[days.length - 1];
  const middle = days[Math.floor((days.length - 1) / 2)];
  const description =
    `${formatCount(total)} requests over ${days.length} ${unit}s` +
    (first !== undefined && last !== undefined
      ? `, from ${periodLabel(first, unit)} to ${periodLabel(last, unit)}; busiest ${unit} ${formatCount(busiest)}.`
      : '.');
  return (
    <figure class="chart">
      <div class="chart-plot">
        <div class="chart-y" aria-hidden="true">
          {ticks.map((tick) => (
            <span>{formatCount(tick)}</span>
          ))}
        </div>
        <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-labelledby={`${id}-title ${id}-desc`} preserveAspectRatio="none" class="chart-svg">
          <title id={`${id}-title`}>{title}</title>
          <desc id={`${id}-desc`}>{description}</desc>
          {ticks.map((tick) => (
            <line class="chart-grid" x1={0} x2={WIDTH} y1={y(tick)} y2={y(tick)} vector-effect="non-scaling-stroke" />
          ))}
          {days.map((_, i) => {
            let base = 0;
            const x = i * slot + (slot - barW) / 2;
            return (
              <g>
                {series.map((s) => {
                  const v = s.values[i] ?? 0;
                  if (v <= 0) return null;
                  const rect = <rect class={`bar ${s.tone}`} x={x} width={barW} y={y(base + v)} height={y(base) - y(base + v)} />;
                  base += v;
                  return rect;
                })}
              </g>
            );
          })}
        </svg>
        <div class="chart-x" aria-hidden="true">
          {[first, middle, last].map((day) => (day === undefined ? null : <span>{periodLabel(day, unit)}</span>))}
        </div>
      </div>
      {series.length > 1 ? (
        <figcaption>
          <ul class="legend">
            {series.map((s) => (
              <li>
                <span class={`swatch ${s.tone}`} aria-hidden="true" />
                {s.name}
              </li>
            ))}
          </ul>
        </figcaption>
      ) : null}
      <details class="chart-table">
        <summary>Show the numbers as a table</summary>
        <TableScroll label={`${title}: the numbers`}>
          <table>
            <caption class="visually-hidden">{title}</caption>
            <thead>
              <tr>
                <th scope="col">{unit === 'hour' ? 'Hour (UTC)' : 'Day (UTC)'}</th>
                {series.map((s) => (
                  <th scope="col">{s.name}</th>
                ))}
                {series.length > 1 ? <th scope="col">Total</th> : null}
              </tr>
            </thead>
            <tbody>
              {days.map((day, i) => (
                <tr>
                  <th scope="row">{unit === 'hour' ? `${day.slice(0, 10)} ${day.slice(11, 13)}:00` : day}</th>
                  {series.map((s) => (
                    <td>{formatCount(s.values[i] ?? 0)}</td>
                  ))}
                  {series.length > 1 ? <td>{formatCount(totals[i] ?? 0)}</td> : null}
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      </details>
    </figure>
  );
}
