// The moves board: moves by state, each with the server's allowed next states as its only
// buttons (Move.allowed_targets), kept live by WatchMove: every event re-reads that move, so a
// second screen follows each step without a reload. A move's location history, corrections
// inside the row they correct, opens below the board.
import { useEffect, useRef, useState } from "preact/hooks";
import { Code } from "@connectrpc/connect";
import { Observation } from "./gen/dcl/v1/moves_pb";
import { MoveState, type LocationRecord, type Move } from "./gen/dcl/v1/moves_pb";
import type { Device } from "./gen/dcl/v1/inventory_pb";
import { newRequestId, refusalOf, sideName, type Api, type Refusal } from "./api";

export const stateName: Record<MoveState, string> = {
  [MoveState.MOVE_STATE_UNSPECIFIED]: "unknown",
  [MoveState.MOVE_DRAFT]: "draft",
  [MoveState.MOVE_PLANNED]: "planned",
  [MoveState.MOVE_APPROVED]: "approved",
  [MoveState.MOVE_IN_PROGRESS]: "in progress",
  [MoveState.MOVE_AWAITING_VERIFICATION]: "awaiting verification",
  [MoveState.MOVE_NEEDS_RECONCILE]: "needs reconcile",
  [MoveState.MOVE_COMPLETED]: "completed",
  [MoveState.MOVE_CANCELLED]: "cancelled",
  [MoveState.MOVE_FAILED]: "failed",
};
const columns = [
  MoveState.MOVE_DRAFT,
  MoveState.MOVE_PLANNED,
  MoveState.MOVE_APPROVED,
  MoveState.MOVE_IN_PROGRESS,
  MoveState.MOVE_AWAITING_VERIFICATION,
  MoveState.MOVE_NEEDS_RECONCILE,
  MoveState.MOVE_COMPLETED,
  MoveState.MOVE_CANCELLED,
  MoveState.MOVE_FAILED,
];
// A browser keeps at most six HTTP/1.1 connections per origin and each watch holds one: the
// board watches the most recently changed open moves, leaving connections for everything else.
const maxWatches = 3;

export function MovesBoard({ api }: { api: Api }) {
  const [moves, setMoves] = useState<Move[]>([]);
  const [devices, setDevices] = useState(new Map<string, Device>());
  const [racks, setRacks] = useState(new Map<string, string>());
  const [error, setError] = useState<Refusal | null>(null);
  const [history, setHistory] = useState<{ device: string; records: LocationRecord[] } | null>(null);
  const watches = useRef(new Map<string, AbortController>());

  const upsert = (m: Move) => setMoves((all) => [m, ...all.filter((x) => x.id !== m.id)]);
  const load = async () => {
    try {
      setMoves((await api.moves.listMoves({ pageSize: 200 })).moves);
      setError(null);
    } catch (e) {
      setError(refusalOf(e));
    }
  };
  useEffect(() => {
    void load();
    void api.inventory.listDevices({ pageSize: 500 }).then((r) => setDevices(new Map(r.devices.map((d) => [d.id, d]))), () => undefined);
    void api.inventory.listRacks({ pageSize: 500 }).then((r) => setRacks(new Map(r.racks.map((k) => [k.id, k.name]))), () => undefined);
    return () => watches.current.forEach((c) => c.abort());
  }, []);

  // Watch the open moves; each event re-reads its move from the server.
  useEffect(() => {
    const open = moves.filter((m) => m.allowedTargets.length > 0).slice(0, maxWatches);
    for (const [id, controller] of watches.current) {
      if (!open.some((m) => m.id === id)) {
        controller.abort();
        watches.current.delete(id);
      }
    }
    for (const m of open) {
      if (watches.current.has(m.id)) continue;
      const controller = new AbortController();
      watches.current.set(m.id, controller);
      void (async () => {
        // A watch ends at a terminal state, or at the server's limit on a stream's length:
        // then it starts again (its history replays; re-reading the move is harmless).
        while (!controller.signal.aborted) {
          try {
            for await (const _ of api.moves.watchMove({ moveId: m.id }, { signal: controller.signal })) {
              upsert(await api.moves.getMove({ moveId: m.id }));
            }
            break;
          } catch (e) {
            const r = refusalOf(e);
            if (controller.signal.aborted || r.code !== Code.DeadlineExceeded) break;
          }
        }
        watches.current.delete(m.id);
      })();
    }
  }, [moves.map((m) => `${m.id}:${m.state}`).join(",")]);

  const advance = async (m: Move, target: MoveState) => {
    try {
      if (target === MoveState.MOVE_CANCELLED) {
        upsert(await api.moves.cancelMove({ moveId: m.id, note: "from the console", requestId: newRequestId() }));
      } else {
        const observation =
          m.state === MoveState.MOVE_NEEDS_RECONCILE
            ? target === MoveState.MOVE_COMPLETED
              ? Observation.FOUND_AT_DESTINATION
              : Observation.NOT_MOVED
            : Observation.UNSPECIFIED;
        upsert(await api.moves.advanceMove({ moveId: m.id, target, observation, note: "from the console", requestId: newRequestId() }));
      }
      setError(null);
    } catch (e) {
      setError(refusalOf(e));
      void load();
    }
  };
  const label = (id: string) => {
    const d = devices.get(id);
    return d ? `${d.serial || id.slice(0, 8)} (${d.vendor} ${d.model})` : id.slice(0, 8);
  };

  return (
    <div>
      <h2>Moves</h2>
      <p>
        <button type="button" onClick={() => void load()}>
          Refresh the board
        </button>
      </p>
      {error && (
        <p role="alert" class="error">
          Refused ({error.reason}): {error.message}
        </p>
      )}
      <div class="board">
        {columns.map((state) => {
          const here = moves.filter((m) => m.state === state);
          return (
            <section class="column" key={state} aria-label={`${stateName[state]} moves`} data-state={stateName[state]}>
              <h3>
                {stateName[state]} <span class="count">({here.length})</span>
              </h3>
              {here.map((m) => (
                <article class="move" key={m.id} data-move={m.id} aria-label={`Move of ${label(m.deviceId)}`}>
                  <p class="move-title">{label(m.deviceId)}</p>
                  <p class="small">
                    to {racks.get(m.destinationRackId) ?? "rack"} {sideName(m.destinationSide)} U{m.destinationUnit}
                  </p>
                  <div class="buttons">
                    {m.allowedTargets.map((t) => (
                      <button type="button" key={t} onClick={() => void advance(m, t)}>
                        {t === MoveState.MOVE_CANCELLED ? "Cancel" : `To ${stateName[t]}`}
                      </button>
                    ))}
                    <button
                      type="button"
                      class="link"
                      onClick={async () => {
                        try {
                          setHistory({ device: m.deviceId, records: (await api.moves.listLocationHistory({ deviceId: m.deviceId })).records });
                        } catch (e) {
                          setError(refusalOf(e));
                        }
                      }}
                    >
                      History
                    </button>
                  </div>
                </article>
              ))}
            </section>
          );
        })}
      </div>
      {history && (
        <section aria-label="Location history">
          <h3>Location history of {label(history.device)}</h3>
          <ol class="history">
            {history.records.map((r) => (
              <HistoryRow key={String(r.id)} r={r} />
            ))}
          </ol>
        </section>
      )}
    </div>
  );
}

function HistoryRow({ r }: { r: LocationRecord }) {
  const where = r.positionKnown ? `${sideName(r.side)} U${r.firstUnit}–U${r.lastUnit}` : "position unknown";
  return (
    <li>
      {r.recordedAt ? new Date(Number(r.recordedAt.seconds) * 1000).toISOString().slice(0, 19).replace("T", " ") : ""} · {r.event} · {where}
      {r.corrections.length > 0 && (
        <ul>
          {r.corrections.map((c) => (
            <li key={String(c.id)}>
              corrected: {c.positionKnown ? `${sideName(c.side)} U${c.firstUnit}–U${c.lastUnit}` : "position unknown"} ({c.note})
            </li>
          ))}
        </ul>
      )}
    </li>
  );
}
