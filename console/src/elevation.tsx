// A rack's elevation as NetBox users know it: front and rear side by side, units in the rack's
// own numbering (descending racks count from the top, a rack may start at unit 0 or 2, an open
// frame has a front only), one block per booking across its units, in the colours and with the
// legend of dclctl's SVG (dclctl/format/rack_elevation.cc). Free units are buttons; a refusal's
// colliding units and a preview's units are marked on top, each with its own accessible name.
import { Side, type Slot } from "./gen/dcl/v1/common_pb";
import { BookingKind, Numbering, type Rack } from "./gen/dcl/v1/occupancy_pb";

export const kindFill: Record<BookingKind, string> = {
  [BookingKind.BOOKING_PLACEMENT]: "#1f6feb",
  [BookingKind.BOOKING_BLOCKING]: "#6e7781",
  [BookingKind.BOOKING_MOVE_HOLD]: "#8250df",
  [BookingKind.BOOKING_RESERVATION]: "#e3a008",
  [BookingKind.BOOKING_KIND_UNSPECIFIED]: "#d1242f",
};
export const kindName: Record<BookingKind, string> = {
  [BookingKind.BOOKING_PLACEMENT]: "placement",
  [BookingKind.BOOKING_BLOCKING]: "blocking",
  [BookingKind.BOOKING_MOVE_HOLD]: "move hold",
  [BookingKind.BOOKING_RESERVATION]: "reservation",
  [BookingKind.BOOKING_KIND_UNSPECIFIED]: "unknown",
};
export const freeFill = "#ffffff";

export interface BookingRun {
  bookingId: string;
  kind: BookingKind;
  deviceId: string;
  reason: string;
  side: Side;
  low: number;
  high: number;
}

// The units of a rack from the top of the picture down.
export function unitsTopDown(rack: Rack): number[] {
  const g = rack.geometry!;
  const units = Array.from({ length: g.unitCount }, (_, i) => g.firstUnit + i);
  return g.numbering === Numbering.DESCENDING ? units : units.reverse();
}

// One run per booking and face (a booking's units on one face are contiguous).
export function bookingRuns(rack: Rack): BookingRun[] {
  const runs = new Map<string, BookingRun>();
  for (const o of rack.occupied) {
    const side = o.slot!.side;
    const key = `${o.bookingId}/${side}`;
    const run = runs.get(key);
    if (run) {
      run.low = Math.min(run.low, o.slot!.unit);
      run.high = Math.max(run.high, o.slot!.unit);
    } else {
      runs.set(key, { bookingId: o.bookingId, kind: o.kind, deviceId: o.deviceId, reason: o.reason, side, low: o.slot!.unit, high: o.slot!.unit });
    }
  }
  return [...runs.values()];
}

const slotKey = (side: Side, unit: number) => `${side === Side.FRONT ? "front" : "rear"}-${unit}`;

interface Props {
  rack: Rack;
  deviceLabel: (deviceId: string) => string;
  colliding: Slot[];
  preview: Slot[];
  selectedBooking: string;
  onFreeUnit: (side: Side, unit: number) => void;
  onBooking: (bookingId: string) => void;
  readOnly: boolean;
}

export function Elevation(props: Props) {
  const { rack } = props;
  const faces = rack.geometry!.hasRear ? [Side.FRONT, Side.REAR] : [Side.FRONT];
  return (
    <div class="elevation">
      <div class="faces">
        {faces.map((side) => (
          <Face key={side} side={side} {...props} />
        ))}
      </div>
      <Legend />
    </div>
  );
}

function Face(props: Props & { side: Side }) {
  const { rack, side } = props;
  const units = unitsTopDown(rack);
  const row = (unit: number) => units.indexOf(unit) + 1; // CSS grid rows start at 1
  const occupied = new Set(rack.occupied.filter((o) => o.slot!.side === side).map((o) => o.slot!.unit));
  const faceName = side === Side.FRONT ? "Front" : "Rear";
  const runs = bookingRuns(rack).filter((r) => r.side === side);
  const collides = new Set(props.colliding.filter((s) => s.side === side).map((s) => s.unit));
  return (
    <section class="face" aria-label={`${faceName} of ${rack.name}`}>
      <h3>{faceName}</h3>
      <div class="units" style={{ gridTemplateRows: `repeat(${units.length}, var(--unit-height))` }}>
        {units.map((unit) => (
          <span class={`unit-number${collides.has(unit) ? " collides" : ""}`} style={{ gridRow: `${row(unit)}` }} aria-hidden="true" key={`n${unit}`}>
            {unit}
          </span>
        ))}
        {units.map((unit) =>
          occupied.has(unit) ? (
            <span class="unit taken" style={{ gridRow: `${row(unit)}` }} key={`u${unit}`} aria-hidden="true" />
          ) : (
            <button
              type="button"
              class="unit free"
              style={{ gridRow: `${row(unit)}` }}
              key={`u${unit}`}
              disabled={props.readOnly}
              aria-label={`${faceName} U${unit} free`}
              onClick={() => props.onFreeUnit(side, unit)}
            />
          ),
        )}
        {runs.map((run) => {
          const top = Math.min(row(run.low), row(run.high));
          const span = run.high - run.low + 1;
          const units = run.low === run.high ? `U${run.low}` : `U${run.low}–U${run.high}`;
          const subject = run.deviceId ? props.deviceLabel(run.deviceId) : "";
          const name = `${faceName} ${units}: ${kindName[run.kind]}${subject ? ` ${subject}` : ""}`;
          const why = run.reason ? ` · ${run.reason}` : "";
          return (
            <button
              type="button"
              key={`${run.bookingId}`}
              class={`booking kind-${run.kind}${props.selectedBooking === run.bookingId ? " selected" : ""}`}
              style={{ gridRow: `${top} / span ${span}`, background: kindFill[run.kind] }}
              aria-label={name}
              title={`${name}${why} · booking ${run.bookingId}`}
              onClick={() => props.onBooking(run.bookingId)}
            >
              {kindName[run.kind]}
              {subject ? ` · ${subject}` : ""}
              {why}
            </button>
          );
        })}
        {props.preview
          .filter((s) => s.side === side && units.includes(s.unit))
          .map((s) => (
            <span
              class="mark preview"
              key={`p${s.unit}`}
              data-preview={slotKey(side, s.unit)}
              style={{ gridRow: `${row(s.unit)}` }}
              title={`${faceName} U${s.unit}: the booking would take it`}
            />
          ))}
        {props.colliding
          .filter((s) => s.side === side && units.includes(s.unit))
          .map((s) => (
            <span
              class="mark collision-unit"
              key={`c${s.unit}`}
              data-collision={slotKey(side, s.unit)}
              style={{ gridRow: `${row(s.unit)}` }}
              title={`${faceName} U${s.unit} is taken`}
            />
          ))}
        {collidingRuns(props.colliding.filter((s) => s.side === side && units.includes(s.unit)).map((s) => row(s.unit))).map(([top, span]) => (
          <span class="mark collision" key={`r${top}`} aria-hidden="true" style={{ gridRow: `${top} / span ${span}` }} />
        ))}
      </div>
    </section>
  );
}

// Contiguous runs of grid rows, as [first row, number of rows]: one outline per run, so that no
// line crosses the label of the booking that took the units.
function collidingRuns(rows: number[]): [number, number][] {
  const sorted = [...new Set(rows)].sort((a, b) => a - b);
  const runs: [number, number][] = [];
  for (const r of sorted) {
    const last = runs[runs.length - 1];
    if (last && last[0] + last[1] === r) last[1] += 1;
    else runs.push([r, 1]);
  }
  return runs;
}

function Legend() {
  const kinds = [BookingKind.BOOKING_PLACEMENT, BookingKind.BOOKING_BLOCKING, BookingKind.BOOKING_MOVE_HOLD, BookingKind.BOOKING_RESERVATION];
  return (
    <ul class="legend" aria-label="Legend">
      {kinds.map((k) => (
        <li key={k}>
          <span class="swatch" style={{ background: kindFill[k] }} aria-hidden="true" />
          {kindName[k]}
        </li>
      ))}
      <li>
        <span class="swatch" style={{ background: freeFill }} aria-hidden="true" />
        free
      </li>
      <li>
        <span class="swatch collision-swatch" aria-hidden="true" />
        collides (refused)
      </li>
    </ul>
  );
}
