// Connect clients for the tests: the official @connectrpc/connect client over HTTP/1.1 with a
// bearer token, one per service, all through the one URL of the occupancy server's listener.
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { InventoryService } from "../src/gen/dcl/v1/inventory_pb";
import { MoveService } from "../src/gen/dcl/v1/moves_pb";
import { OccupancyService } from "../src/gen/dcl/v1/occupancy_pb";
import { ReservationService } from "../src/gen/dcl/v1/reservation_pb";

export function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run through tests/run (tests/http/suite.sh)`);
  return value;
}

export interface Clients {
  inventory: Client<typeof InventoryService>;
  occupancy: Client<typeof OccupancyService>;
  moves: Client<typeof MoveService>;
  reservations: Client<typeof ReservationService>;
}

export function clients(token: string, baseUrl = env("HTTP_URL")): Clients {
  const bearer: Interceptor = (next) => async (request) => {
    if (token !== "") request.header.set("Authorization", `Bearer ${token}`);
    return next(request);
  };
  const transport = createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors: [bearer] });
  return {
    inventory: createClient(InventoryService, transport),
    occupancy: createClient(OccupancyService, transport),
    moves: createClient(MoveService, transport),
    reservations: createClient(ReservationService, transport),
  };
}
