// One rack: its elevation, its capacity, and the technician's actions on it — place a device,
// block or reserve units (each with PlanBooking's preview first), release a booking. The rack
// is read from the server after every action; a refusal shows the server's message and marks
// exactly the units it names.
import { useEffect, useMemo, useState } from "preact/hooks";
import { Reason, Side, type Slot } from "./gen/dcl/v1/common_pb";
import type { Device } from "./gen/dcl/v1/inventory_pb";
import { BookingKind, type Rack, type RackCapacity, type CapacityDimension, type FeedCapacity, type PortCapacity } from "./gen/dcl/v1/occupancy_pb";
import { newRequestId, overOf, refusalOf, sideName, slotsText, type Api, type Over, type Refusal } from "./api";
import { Elevation, bookingRuns, kindName } from "./elevation";

type Action = "place" | "block" | "reserve";

export function RackView({ api, rackId, readOnly }: { api: Api; rackId: string; readOnly: boolean }) {
  const [rack, setRack] = useState<Rack | null>(null);
  const [capacity, setCapacity] = useState<RackCapacity | null>(null);
  const [devices, setDevices] = useState<Device[]>([]);
  const [loadError, setLoadError] = useState<Refusal | null>(null);
  const [refusal, setRefusal] = useState<Refusal | null>(null);
  const [notice, setNotice] = useState("");
  const [preview, setPreview] = useState<Slot[]>([]);
  const [form, setForm] = useState<{ side: Side; unit: number } | null>(null);
  const [selected, setSelected] = useState("");

  const reload = async () => {
    try {
      // Both read before either is shown, so the elevation and the capacity never disagree.
      const [r, c] = await Promise.all([api.occupancy.getRack({ rackId }), api.occupancy.getRackCapacity({ rackId })]);
      setRack(r);
      setCapacity(c);
      return r;
    } catch (e) {
      setLoadError(refusalOf(e));
      return null;
    }
  };
  useEffect(() => {
    (async () => {
      const r = await reload();
      if (r) setDevices((await api.inventory.listDevices({ siteId: r.siteId, pageSize: 500 })).devices);
    })();
  }, [rackId]);

  const label = useMemo(() => {
    const byId = new Map(devices.map((d) => [d.id, d]));
    return (id: string) => {
      const d = byId.get(id);
      return d ? `${d.serial || d.id.slice(0, 8)} (${d.vendor} ${d.model})` : id.slice(0, 8);
    };
  }, [devices]);

  if (loadError) return <p role="alert" class="error">{loadError.message}</p>;
  if (!rack) return <p>Loading the rack…</p>;
  const g = rack.geometry!;
  // The outcome is shown together with the rack as the server has it now.
  const after = async (message: string) => {
    await reload();
    setRefusal(null);
    setPreview([]);
    setForm(null);
    setNotice(message);
  };
  const refused = async (e: unknown) => {
    const r = refusalOf(e);
    await reload();
    setRefusal(r);
    setPreview([]);
    setNotice("");
  };
  const selectedRun = bookingRuns(rack).filter((r) => r.bookingId === selected);

  return (
    <div>
      <h2>Rack {rack.name}</h2>
      <p class="facts">
        {g.unitCount}U, units {g.firstUnit}–{g.firstUnit + g.unitCount - 1} numbered{" "}
        {g.numbering === 2 ? "from the top down" : "from the bottom up"}, {g.hasRear ? "front and rear" : "open frame (front only)"}
      </p>
      <div class="rack-layout">
        <Elevation
          rack={rack}
          deviceLabel={label}
          colliding={refusal?.colliding ?? []}
          preview={preview}
          selectedBooking={selected}
          readOnly={readOnly}
          onFreeUnit={(side, unit) => {
            setForm({ side, unit });
            setSelected("");
            setPreview([]);
            setNotice("");
          }}
          onBooking={(id) => {
            setSelected(id);
            setForm(null);
          }}
        />
        <aside class="panel">
          {refusal && (
            <div role="alert" class="error refusal">
              <strong>Refused ({refusal.reason}):</strong> {refusal.message}
              {refusal.colliding.length > 0 && <p>Taken: {slotsText(refusal.colliding)} (marked in the elevation).</p>}
              {refusal.over && <p>Over: {overText(refusal.over)} (marked in the capacity).</p>}
            </div>
          )}
          {notice && (
            <p role="status" class="notice">
              {notice}
            </p>
          )}
          {form && !readOnly && (
            <BookingForm
              key={`${form.side}-${form.unit}`}
              api={api}
              rack={rack}
              devices={devices}
              start={form}
              onPreview={(slots, r) => {
                setPreview(slots);
                setRefusal(r);
              }}
              onDone={after}
              onRefused={refused}
              onClose={() => {
                setForm(null);
                setPreview([]);
              }}
            />
          )}
          {selectedRun.length > 0 && (
            <BookingDetails
              api={api}
              readOnly={readOnly}
              runs={selectedRun}
              label={label}
              onDone={after}
              onRefused={refused}
            />
          )}
          {capacity && <Capacity capacity={capacity} label={label} over={refusal?.over ?? null} />}
        </aside>
      </div>
    </div>
  );
}

function BookingForm(props: {
  api: Api;
  rack: Rack;
  devices: Device[];
  start: { side: Side; unit: number };
  onPreview: (slots: Slot[], refusal: Refusal | null) => void;
  onDone: (message: string) => Promise<void>;
  onRefused: (e: unknown) => Promise<void>;
  onClose: () => void;
}) {
  const { api, rack } = props;
  const [action, setAction] = useState<Action>("place");
  const [side, setSide] = useState<string>(props.start.side === Side.REAR ? "rear" : "front");
  const [first, setFirst] = useState(props.start.unit);
  const [last, setLast] = useState(props.start.unit);
  const [search, setSearch] = useState("");
  const [deviceId, setDeviceId] = useState("");
  const [reason, setReason] = useState("");
  const [busy, setBusy] = useState(false);
  const matches = props.devices
    .filter((d) => !d.decommissioned)
    .filter((d) => `${d.serial} ${d.vendor} ${d.model}`.toLowerCase().includes(search.toLowerCase()));
  const sideValue = side === "rear" ? Side.REAR : Side.FRONT;
  const both = side === "both";

  const booking = () => ({
    rackId: rack.id,
    kind: action === "place" ? BookingKind.BOOKING_PLACEMENT : action === "block" ? BookingKind.BOOKING_BLOCKING : BookingKind.BOOKING_RESERVATION,
    deviceId: action === "place" ? deviceId : "",
    side: both ? Side.UNSPECIFIED : sideValue,
    firstUnit: first,
    lastUnit: action === "place" ? 0 : last,
    bothSides: both,
    reason,
  });
  const previewIt = async () => {
    try {
      const plan = await api.occupancy.planBooking({ booking: booking() });
      if (plan.ok) props.onPreview(plan.slots, null);
      else {
        const r = plan.rejection!;
        props.onPreview([], { code: 9, reason: Reason[r.reason], message: r.message, colliding: r.collidingSlots, role: "", over: overOf(r.metadata) });
      }
    } catch (e) {
      props.onPreview([], refusalOf(e));
    }
  };
  const save = async () => {
    setBusy(true);
    try {
      if (action === "place") {
        await api.occupancy.placeDevice({ rackId: rack.id, deviceId, side: sideValue, unit: first, reason, requestId: newRequestId() });
        await props.onDone(`Placed at ${sideName(sideValue)} U${first}.`);
      } else if (action === "block") {
        await api.occupancy.blockUnits({ rackId: rack.id, side: both ? Side.UNSPECIFIED : sideValue, bothSides: both, firstUnit: first, lastUnit: last, reason, requestId: newRequestId() });
        await props.onDone(`Blocked U${first}–U${last}.`);
      } else {
        await api.occupancy.reserveUnits({ rackId: rack.id, side: both ? Side.UNSPECIFIED : sideValue, bothSides: both, firstUnit: first, lastUnit: last, reason, requestId: newRequestId() });
        await props.onDone(`Reserved U${first}–U${last}.`);
      }
    } catch (e) {
      await props.onRefused(e);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form
      class="booking-form"
      aria-label="Book units"
      onSubmit={(e) => {
        e.preventDefault();
        void save();
      }}
    >
      <h3>
        {sideName(props.start.side)} U{props.start.unit}
      </h3>
      <fieldset>
        <legend>Action</legend>
        {(["place", "block", "reserve"] as Action[]).map((a) => (
          <label key={a} class="inline">
            <input type="radio" name="action" value={a} checked={action === a} onChange={() => setAction(a)} />
            {a === "place" ? "Place a device" : a === "block" ? "Block units" : "Reserve units"}
          </label>
        ))}
      </fieldset>
      <label>
        Side
        <select value={side} onChange={(e) => setSide((e.target as HTMLSelectElement).value)}>
          <option value="front">front</option>
          {rack.geometry!.hasRear && <option value="rear">rear</option>}
          {action !== "place" && rack.geometry!.hasRear && <option value="both">front and rear</option>}
        </select>
      </label>
      <label>
        {action === "place" ? "Lowest unit" : "First unit"}
        <input type="number" value={first} onInput={(e) => setFirst(Number((e.target as HTMLInputElement).value))} />
      </label>
      {action !== "place" && (
        <label>
          Last unit
          <input type="number" value={last} onInput={(e) => setLast(Number((e.target as HTMLInputElement).value))} />
        </label>
      )}
      {action === "place" && (
        <>
          <label>
            Find a device (serial, vendor, model)
            <input type="search" value={search} onInput={(e) => setSearch((e.target as HTMLInputElement).value)} />
          </label>
          <label>
            Device
            <select value={deviceId} onChange={(e) => setDeviceId((e.target as HTMLSelectElement).value)}>
              <option value="">choose a device…</option>
              {matches.map((d) => (
                <option key={d.id} value={d.id}>
                  {d.serial || d.id.slice(0, 8)} · {d.vendor} {d.model} · {d.heightUnits}U
                </option>
              ))}
            </select>
          </label>
        </>
      )}
      <label>
        Reason
        <input type="text" value={reason} onInput={(e) => setReason((e.target as HTMLInputElement).value)} />
      </label>
      <div class="buttons">
        <button type="button" onClick={() => void previewIt()}>
          Preview
        </button>
        <button type="submit" class="primary" disabled={busy || (action === "place" && deviceId === "")}>
          {action === "place" ? "Place device" : action === "block" ? "Block" : "Reserve"}
        </button>
        <button type="button" onClick={props.onClose}>
          Close
        </button>
      </div>
    </form>
  );
}

function BookingDetails(props: {
  api: Api;
  readOnly: boolean;
  runs: ReturnType<typeof bookingRuns>;
  label: (id: string) => string;
  onDone: (message: string) => Promise<void>;
  onRefused: (e: unknown) => Promise<void>;
}) {
  const run = props.runs[0];
  const [reason, setReason] = useState("");
  return (
    <section class="booking-details" aria-label="Booking">
      <h3>{kindName[run.kind]}</h3>
      <ul>
        {props.runs.map((r) => (
          <li key={r.side}>
            {sideName(r.side)} U{r.low}
            {r.high !== r.low ? `–U${r.high}` : ""}
          </li>
        ))}
      </ul>
      {run.deviceId && <p>Device: {props.label(run.deviceId)}</p>}
      {run.reason && <p>Reason: {run.reason}</p>}
      <p class="small">Booking {run.bookingId}</p>
      {!props.readOnly && run.kind !== BookingKind.BOOKING_MOVE_HOLD && (
        <form
          onSubmit={async (e) => {
            e.preventDefault();
            try {
              // The kind this screen shows: if the booking became something else since (a reservation a
              // device was placed into whole is a placement now), the server releases nothing.
              await props.api.occupancy.releaseBooking({
                bookingId: run.bookingId,
                expectedKind: run.kind,
                reason,
                requestId: newRequestId(),
              });
              await props.onDone("Released.");
            } catch (err) {
              await props.onRefused(err);
            }
          }}
        >
          <label>
            Reason for the release
            <input type="text" value={reason} onInput={(e) => setReason((e.target as HTMLInputElement).value)} />
          </label>
          <button type="submit">Release</button>
        </form>
      )}
    </section>
  );
}

// "feed A with feed B lost", "the cooling budget": what a capacity refusal names.
function overText(o: Over): string {
  if (o.dimension === "feed_lost") return `feed ${o.feed} with feed ${o.lostFeed} lost`;
  if (o.dimension === "feed") return `feed ${o.feed}`;
  if (o.dimension === "cooling") return "the cooling budget (heat)";
  if (o.dimension === "ports") return `the ${o.speed} switch ports`;
  return `the ${o.dimension} budget`;
}

const watts = (n: bigint) => `${n.toLocaleString("en-US")} W`;

function Capacity({ capacity, label, over }: { capacity: RackCapacity; label: (id: string) => string; over: Over | null }) {
  return (
    <section class="capacity" aria-label="Capacity">
      <h3>Capacity</h3>
      <p>
        Free units: {capacity.freeFrontUnits} front
        {capacity.hasRear ? `, ${capacity.freeRearUnits} rear` : " (no rear)"}
      </p>
      <Dimension title="Power" unit="W" d={capacity.powerWatts} label={label} refused={over?.dimension === "power"} />
      <Feeds feeds={capacity.feeds} over={over} />
      <Dimension title="Heat (cooling)" unit="W" d={capacity.coolingWatts} label={label} refused={over?.dimension === "cooling"} />
      <p>Airflow: {capacity.airflow || "none set (no device is refused for its airflow)"}</p>
      <Dimension title="Weight" unit="kg" d={capacity.weightKg} label={label} refused={over?.dimension === "weight"} />
      <Ports ports={capacity.ports} over={over} />
    </section>
  );
}

// Each feed with every feed up and with each other one lost (N-1), and the draw still free on
// it either way. The cell a refusal names is marked.
function Feeds({ feeds, over }: { feeds: FeedCapacity[]; over: Over | null }) {
  if (feeds.length === 0) return <p>Power feeds: none recorded.</p>;
  const lostNames = feeds.map((f) => f.name);
  return (
    <div class="table-scroll">
    <table class="feeds">
      <caption>Power feeds (N-1: what each carries with another lost)</caption>
      <thead>
        <tr>
          <th scope="col">Feed</th>
          <th scope="col">Available</th>
          <th scope="col">Used</th>
          {lostNames.map((n) => (
            <th scope="col" key={n}>
              {n} lost
            </th>
          ))}
          <th scope="col">Headroom</th>
        </tr>
      </thead>
      <tbody>
        {feeds.map((f) => {
          const overHere = over?.dimension === "feed" && over.feed === f.name;
          return (
            <tr key={f.name}>
              <th scope="row" title={`${f.voltage} V × ${f.amperage} A ${f.phase} at ${f.maxUtilizationPercent} %`}>
                {f.name}
              </th>
              <td>{watts(f.availableWatts)}</td>
              <td data-over={overHere ? `feed-${f.name}` : undefined}>
                {watts(f.usedWatts)}
                {overHere && <span class="refused-here">(refused here)</span>}
              </td>
              {lostNames.map((n) => {
                const loss = f.ifLost.find((l) => l.lostFeed === n);
                const refusedHere = over?.dimension === "feed_lost" && over.feed === f.name && over.lostFeed === n;
                return (
                  <td key={n} data-over={refusedHere ? `feed-${f.name}-lost-${n}` : undefined}>
                    {loss ? watts(loss.carriedWatts) : "–"}
                    {refusedHere && <span class="refused-here">(refused here)</span>}
                  </td>
                );
              })}
              <td>{watts(f.headroomWatts)}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
    </div>
  );
}

// Switch ports per speed the rack offers or uses; the speed a refusal names is marked.
function Ports({ ports, over }: { ports: PortCapacity[]; over: Over | null }) {
  const shown = ports.filter((p) => p.offered > 0n || p.used > 0n);
  if (shown.length === 0) return <p>Switch ports: none recorded.</p>;
  return (
    <div class="dimension">
      <h4>Switch ports</h4>
      <ul>
        {shown.map((p) => {
          const refused = over?.dimension === "ports" && over.speed === p.speed;
          return (
            <li key={p.speed} data-over={refused ? `ports-${p.speed}` : undefined}>
              {p.speed}: {p.used.toString()} of {p.offered.toString()} used
              {refused ? " (refused here)" : ""}
            </li>
          );
        })}
      </ul>
    </div>
  );
}

function Dimension({ title, unit, d, label, refused }: { title: string; unit: string; d?: CapacityDimension; label: (id: string) => string; refused: boolean }) {
  if (!d) return null;
  const item = (i: { deviceId: string; bookingId: string; value: bigint; reason: string }, showValue: boolean) => (
    <li key={i.bookingId}>
      {i.deviceId ? label(i.deviceId) : `booking ${i.bookingId.slice(0, 8)}`}
      {showValue ? `: ${i.value} ${unit}` : i.reason ? `: ${i.reason}` : ""}
    </li>
  );
  return (
    <div class="dimension" data-over={refused ? title : undefined}>
      <h4>
        {title}
        {refused ? " (refused here)" : ""}
      </h4>
      <p>
        {d.knownUsed.toString()} {unit} counted
        {d.budgetKnown ? ` of ${d.budget} ${unit} budget` : ", no budget known"}
        {d.itemsWithUnknownValue > 0 ? `; ${d.itemsWithUnknownValue} unknown` : ""}
      </p>
      {d.counted.length > 0 && (
        <details>
          <summary>Counted ({d.counted.length})</summary>
          <ul>{d.counted.map((i) => item(i, true))}</ul>
        </details>
      )}
      {d.unknown.length > 0 && (
        <details open>
          <summary>Unknown ({d.unknown.length})</summary>
          <ul>{d.unknown.map((i) => item(i, false))}</ul>
        </details>
      )}
      {d.notCounted.length > 0 && (
        <details>
          <summary>Not counted ({d.notCounted.length})</summary>
          <ul>{d.notCounted.map((i) => item(i, false))}</ul>
        </details>
      )}
    </div>
  );
}
