// The read views: sites with their racks, devices with filters, reservations (commerce).
import { useEffect, useState } from "preact/hooks";
import type { RackRecord, Site, Device } from "./gen/dcl/v1/inventory_pb";
import { ProcessState } from "./gen/dcl/v1/inventory_pb";
import { DepthClass } from "./gen/dcl/v1/occupancy_pb";
import { ReservationState, type Reservation } from "./gen/dcl/v1/reservation_pb";
import { refusalOf, type Api, type Refusal } from "./api";

function Failure({ error }: { error: Refusal | null }) {
  return error ? (
    <p role="alert" class="error">
      {error.message}
    </p>
  ) : null;
}

export function SitesView({ api }: { api: Api }) {
  const [sites, setSites] = useState<Site[]>([]);
  const [racks, setRacks] = useState<RackRecord[]>([]);
  const [error, setError] = useState<Refusal | null>(null);
  useEffect(() => {
    (async () => {
      try {
        setSites((await api.inventory.listSites({ pageSize: 500 })).sites);
        setRacks((await api.inventory.listRacks({ pageSize: 500 })).racks);
      } catch (e) {
        setError(refusalOf(e));
      }
    })();
  }, []);
  return (
    <div>
      <h2>Sites and racks</h2>
      <Failure error={error} />
      {sites.map((s) => (
        <section key={s.id} aria-label={`Site ${s.name}`}>
          <h3>{s.name}</h3>
          <ul class="racks">
            {racks
              .filter((r) => r.siteId === s.id)
              .map((r) => (
                <li key={r.id}>
                  <a href={`#/racks/${r.id}`}>{r.name}</a> <span class="small">{r.geometry?.unitCount}U</span>
                </li>
              ))}
          </ul>
        </section>
      ))}
    </div>
  );
}

const stateLabel: Record<ProcessState, string> = {
  [ProcessState.PROCESS_STATE_UNSPECIFIED]: "any",
  [ProcessState.PROCESS_NORMAL]: "normal",
  [ProcessState.PROCESS_STAGING]: "staging",
  [ProcessState.PROCESS_MOVING]: "moving",
  [ProcessState.PROCESS_IN_TRANSIT]: "in transit",
};
const depthLabel: Record<DepthClass, string> = {
  [DepthClass.DEPTH_CLASS_UNSPECIFIED]: "unknown",
  [DepthClass.DEPTH_FULL]: "full",
  [DepthClass.DEPTH_HALF]: "half",
  [DepthClass.DEPTH_UNKNOWN]: "unknown",
};

export function DevicesView({ api }: { api: Api }) {
  const [sites, setSites] = useState<Site[]>([]);
  const [filter, setFilter] = useState({ siteId: "", vendor: "", model: "", hardwareProfile: "", processState: ProcessState.PROCESS_STATE_UNSPECIFIED, includeDecommissioned: false });
  const [devices, setDevices] = useState<Device[]>([]);
  const [error, setError] = useState<Refusal | null>(null);
  const load = async () => {
    try {
      setDevices((await api.inventory.listDevices({ ...filter, pageSize: 500 })).devices);
      setError(null);
    } catch (e) {
      setError(refusalOf(e));
    }
  };
  useEffect(() => {
    void api.inventory.listSites({ pageSize: 500 }).then((r) => setSites(r.sites), () => undefined);
    void load();
  }, []);
  const text = (key: "vendor" | "model" | "hardwareProfile", label: string) => (
    <label>
      {label}
      <input type="text" value={filter[key]} onInput={(e) => setFilter({ ...filter, [key]: (e.target as HTMLInputElement).value })} />
    </label>
  );
  return (
    <div>
      <h2>Devices</h2>
      <form
        class="filters"
        aria-label="Device filters"
        onSubmit={(e) => {
          e.preventDefault();
          void load();
        }}
      >
        <label>
          Site
          <select value={filter.siteId} onChange={(e) => setFilter({ ...filter, siteId: (e.target as HTMLSelectElement).value })}>
            <option value="">any</option>
            {sites.map((s) => (
              <option key={s.id} value={s.id}>
                {s.name}
              </option>
            ))}
          </select>
        </label>
        {text("vendor", "Vendor")}
        {text("model", "Model")}
        {text("hardwareProfile", "Profile")}
        <label>
          State
          <select value={String(filter.processState)} onChange={(e) => setFilter({ ...filter, processState: Number((e.target as HTMLSelectElement).value) })}>
            {[0, 1, 2, 3, 4].map((s) => (
              <option key={s} value={String(s)}>
                {stateLabel[s as ProcessState]}
              </option>
            ))}
          </select>
        </label>
        <label class="inline">
          <input type="checkbox" checked={filter.includeDecommissioned} onChange={(e) => setFilter({ ...filter, includeDecommissioned: (e.target as HTMLInputElement).checked })} />
          include decommissioned
        </label>
        <button type="submit">Filter</button>
      </form>
      <Failure error={error} />
      <div class="table-wrap">
        <table>
          <caption>{devices.length} devices</caption>
          <thead>
            <tr>
              <th scope="col">Serial</th>
              <th scope="col">Vendor</th>
              <th scope="col">Model</th>
              <th scope="col">Profile</th>
              <th scope="col">Height</th>
              <th scope="col">Depth</th>
              <th scope="col">State</th>
              <th scope="col">Power</th>
              <th scope="col">Weight</th>
            </tr>
          </thead>
          <tbody>
            {devices.map((d) => (
              <tr key={d.id}>
                <td>{d.serial || "—"}</td>
                <td>{d.vendor}</td>
                <td>{d.model}</td>
                <td>{d.hardwareProfile}</td>
                <td>{d.heightUnits}U</td>
                <td>{depthLabel[d.depthClass]}</td>
                <td>{d.decommissioned ? "decommissioned" : stateLabel[d.processState]}</td>
                <td>{d.powerDrawWatts === undefined ? "unknown" : `${d.powerDrawWatts} W`}</td>
                <td>{d.weightKg === undefined ? "unknown" : `${d.weightKg} kg`}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}

const reservationLabel: Record<ReservationState, string> = {
  [ReservationState.RESERVATION_STATE_UNSPECIFIED]: "any",
  [ReservationState.RESERVATION_HELD]: "held",
  [ReservationState.RESERVATION_CONVERTED]: "converted",
  [ReservationState.RESERVATION_EXPIRED]: "expired",
  [ReservationState.RESERVATION_CANCELLED]: "cancelled",
};

export function ReservationsView({ api }: { api: Api }) {
  const [state, setState] = useState(ReservationState.RESERVATION_STATE_UNSPECIFIED);
  const [rows, setRows] = useState<Reservation[]>([]);
  const [error, setError] = useState<Refusal | null>(null);
  useEffect(() => {
    void api.reservations.listReservations({ state, pageSize: 500 }).then(
      (r) => {
        setRows(r.reservations);
        setError(null);
      },
      (e) => setError(refusalOf(e)),
    );
  }, [state]);
  return (
    <div>
      <h2>Reservations</h2>
      <p class="small">Read-only: reservations are made and ended by the commerce backend.</p>
      <label>
        State
        <select value={String(state)} onChange={(e) => setState(Number((e.target as HTMLSelectElement).value))}>
          {[0, 1, 2, 3, 4].map((s) => (
            <option key={s} value={String(s)}>
              {reservationLabel[s as ReservationState]}
            </option>
          ))}
        </select>
      </label>
      <Failure error={error} />
      <div class="table-wrap">
        <table>
          <caption>{rows.length} reservations</caption>
          <thead>
            <tr>
              <th scope="col">Order key</th>
              <th scope="col">State</th>
              <th scope="col">Device</th>
              <th scope="col">Expires</th>
              <th scope="col">Ended</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.id}>
                <td>{r.idempotencyKey}</td>
                <td>{reservationLabel[r.state]}</td>
                <td>{r.deviceId.slice(0, 8)}</td>
                <td>{r.expiresAt ? new Date(Number(r.expiresAt.seconds) * 1000).toISOString().slice(0, 16).replace("T", " ") : ""}</td>
                <td>{r.endReason}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
