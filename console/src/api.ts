// The console's one fetch layer: the official Connect client (connect-web) over this origin's
// HTTP/JSON API, the bearer token in memory (and sessionStorage, so a reload keeps the sign-in;
// never a cookie). Every view reads state from the server through these clients.
import { Code, ConnectError, createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { ErrorDetailSchema, Side, type Slot } from "./gen/dcl/v1/common_pb";
import { InventoryService } from "./gen/dcl/v1/inventory_pb";
import { MoveService } from "./gen/dcl/v1/moves_pb";
import { OccupancyService } from "./gen/dcl/v1/occupancy_pb";
import { ReservationService } from "./gen/dcl/v1/reservation_pb";
import { ErrorInfoSchema } from "./gen/google/rpc/status_pb";

const storageKey = "dcl-console-token";

export interface Api {
  inventory: Client<typeof InventoryService>;
  occupancy: Client<typeof OccupancyService>;
  moves: Client<typeof MoveService>;
  reservations: Client<typeof ReservationService>;
}

export function makeApi(token: string): Api {
  const bearer: Interceptor = (next) => (request) => {
    request.header.set("Authorization", `Bearer ${token}`);
    return next(request);
  };
  const transport = createConnectTransport({ baseUrl: window.location.origin, interceptors: [bearer] });
  return {
    inventory: createClient(InventoryService, transport),
    occupancy: createClient(OccupancyService, transport),
    moves: createClient(MoveService, transport),
    reservations: createClient(ReservationService, transport),
  };
}

export function storedToken(): string {
  return window.sessionStorage.getItem(storageKey) ?? "";
}
export function storeToken(token: string): void {
  if (token === "") window.sessionStorage.removeItem(storageKey);
  else window.sessionStorage.setItem(storageKey, token);
}

// A refusal as the console shows it: the server's message, its machine-readable reason, the
// units it names (UNIT_OCCUPIED's colliding slots) and the capacity it names (a budget's
// refusal: the dimension, the feed and, for N-1, the feed lost), each marked where it is shown.
export interface Refusal {
  code: Code;
  reason: string;
  message: string;
  colliding: Slot[];
  role: string; // ROLE_NOT_PERMITTED: the caller's role
  over: Over | null;
}

// What a capacity refusal names: "power", "weight", "cooling", "feed", "feed_lost" or "ports".
export interface Over {
  dimension: string;
  feed: string;
  lostFeed: string;
  speed: string; // ports: the speed that ran out
}

export function overOf(metadata: { [key: string]: string } | undefined): Over | null {
  const dimension = metadata?.["dimension"] ?? "";
  if (dimension === "") return null;
  return { dimension, feed: metadata?.["feed"] ?? "", lostFeed: metadata?.["lost_feed"] ?? "", speed: metadata?.["speed"] ?? "" };
}

export function refusalOf(error: unknown): Refusal {
  const e = ConnectError.from(error);
  const info = e.findDetails(ErrorInfoSchema)[0];
  const detail = e.findDetails(ErrorDetailSchema)[0];
  return {
    code: e.code,
    reason: info?.reason ?? Code[e.code],
    message: detail?.message || e.rawMessage,
    colliding: detail?.collidingSlots ?? [],
    role: info?.metadata["role"] ?? "",
    over: overOf(detail?.metadata ?? info?.metadata),
  };
}

export function sideName(side: Side): string {
  return side === Side.FRONT ? "front" : side === Side.REAR ? "rear" : "front and rear";
}

// "front U9, front U10, rear U9"
export function slotsText(slots: Slot[]): string {
  return slots.map((s) => `${sideName(s.side)} U${s.unit}`).join(", ");
}

export function newRequestId(): string {
  return crypto.randomUUID();
}
