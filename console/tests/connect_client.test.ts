// Every RPC of the four services through the official Connect client for TypeScript
// (@connectrpc/connect with @connectrpc/connect-node, types generated from proto/ by
// protoc-gen-es), against the real servers: each unary RPC at least once, WatchMove following a
// move to its end, and the gate's refusals arriving as ConnectErrors with their code and the
// ErrorInfo / dcl.v1.ErrorDetail details.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorDetailSchema, Reason, Side } from "../src/gen/dcl/v1/common_pb";
import { DepthClass, Numbering, BookingKind } from "../src/gen/dcl/v1/occupancy_pb";
import { ProcessState } from "../src/gen/dcl/v1/inventory_pb";
import { MoveState, type MoveEvent } from "../src/gen/dcl/v1/moves_pb";
import { ReservationState } from "../src/gen/dcl/v1/reservation_pb";
import { ErrorInfoSchema } from "../src/gen/google/rpc/status_pb";
import { clients, env } from "./clients";

const operator = clients(env("TOKEN_dc_operator"));
const commerce = clients(env("TOKEN_commerce"));
const customer = clients(env("TOKEN_customer"));
const unique = `${Date.now()}`;

async function refusal(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (e) {
    return ConnectError.from(e);
  }
  assert.fail("the call was expected to be refused");
}

function reasonOf(error: ConnectError): string {
  const info = error.findDetails(ErrorInfoSchema)[0];
  assert.ok(info, `no google.rpc.ErrorInfo in ${error.message}`);
  return info.reason;
}

test("every RPC over HTTP/JSON with the official Connect client", async () => {
  const called = new Set<string>();
  const mark = (name: string) => called.add(name);

  // Inventory: a site, a rack, devices.
  const site = await operator.inventory.createSite({ name: `TST-${unique}`, requestId: `site-${unique}` });
  mark("InventoryService/CreateSite");
  assert.equal((await operator.inventory.getSite({ siteId: site.id })).name, site.name);
  mark("InventoryService/GetSite");
  const sites = await operator.inventory.listSites({ pageSize: 100000 }); // AIP-158: coerced
  assert.ok(sites.sites.some((s) => s.id === site.id));
  mark("InventoryService/ListSites");
  const rack = await operator.inventory.createRack({
    requestId: `rack-${unique}`,
    siteId: site.id,
    name: "R1",
    geometry: { firstUnit: 1, unitCount: 42, numbering: Numbering.ASCENDING, hasRear: true },
    powerBudgetWatts: 5000,
  });
  mark("InventoryService/CreateRack");
  assert.equal((await operator.inventory.getRack({ rackId: rack.id })).geometry?.unitCount, 42);
  mark("InventoryService/GetRack");
  assert.equal((await operator.inventory.listRacks({ siteId: site.id })).racks.length, 1);
  mark("InventoryService/ListRacks");
  const renamed = await operator.inventory.updateRack({ requestId: `rack-up-${unique}`, rackId: rack.id, name: "R1-renamed" });
  assert.equal(renamed.name, "R1-renamed");
  mark("InventoryService/UpdateRack");
  // Feeds set and removed again: the devices placed below have no power port count, which a
  // rack with feeds would refuse (POWER_PORTS_UNKNOWN).
  const fed = await operator.inventory.setPowerFeeds({
    requestId: `feeds-${unique}`,
    rackId: rack.id,
    feeds: [
      { name: "A", voltage: 230, amperage: 16 },
      { name: "B", voltage: 230, amperage: 16 },
    ],
  });
  assert.deepEqual(fed.powerFeeds.map((f) => [f.name, Number(f.availableWatts)]), [["A", 2944], ["B", 2944]]);
  assert.equal((await operator.inventory.setPowerFeeds({ rackId: rack.id, feeds: [] })).powerFeeds.length, 0);
  mark("InventoryService/SetPowerFeeds");
  const register = (serial: string, vendor = "HPE") =>
    operator.inventory.registerDevice({
      requestId: `dev-${serial}-${unique}`,
      siteId: site.id,
      vendor,
      model: "DL380",
      hardwareProfile: "c64-m512",
      serial: `${serial}-${unique}`,
      heightUnits: 2,
      depthClass: DepthClass.DEPTH_FULL,
      powerDrawWatts: 800,
      initialState: ProcessState.PROCESS_NORMAL,
    });
  const first = await register("A");
  const second = await register("B");
  const forSale = await register("C", "Dell"); // the one machine Reserve's criteria match
  const retired = await register("D");
  mark("InventoryService/RegisterDevice");
  // A batch of one (another vendor: the HPE listing below counts three).
  const batch = await operator.inventory.registerDevices({
    requests: [{ requestId: `dev-E-${unique}`, siteId: site.id, vendor: "Lenovo", model: "SR650", serial: `E-${unique}`, heightUnits: 1, depthClass: DepthClass.DEPTH_FULL, powerDrawWatts: 100, weightKg: 20 }],
  });
  assert.equal(batch.devices.length, 1);
  assert.equal(batch.devices[0].serial, `E-${unique}`);
  mark("InventoryService/RegisterDevices");
  assert.equal((await operator.inventory.getDevice({ deviceId: first.id })).serial, `A-${unique}`);
  mark("InventoryService/GetDevice");
  const listed = await operator.inventory.listDevices({ siteId: site.id, vendor: "HPE" });
  assert.equal(listed.devices.length, 3);
  mark("InventoryService/ListDevices");
  assert.equal((await operator.inventory.updateDevice({ requestId: `dev-up-${unique}`, deviceId: second.id, model: "DL380 Gen10" })).model, "DL380 Gen10");
  mark("InventoryService/UpdateDevice");
  const staged = await operator.inventory.setDeviceState({ requestId: `state-${unique}`, deviceId: retired.id, state: ProcessState.PROCESS_STAGING });
  assert.equal(staged.processState, ProcessState.PROCESS_STAGING);
  mark("InventoryService/SetDeviceState");
  await operator.inventory.decommissionDevice({ requestId: `retire-${unique}`, deviceId: retired.id, reason: "test" });
  mark("InventoryService/DecommissionDevice");

  // Occupancy: the two technicians' U9, by the same rules as over gRPC.
  const plan = await operator.occupancy.planBooking({
    booking: { rackId: rack.id, kind: BookingKind.BOOKING_PLACEMENT, deviceId: first.id, side: Side.FRONT, firstUnit: 9 },
  });
  assert.equal(plan.ok, true);
  assert.deepEqual(plan.slots.filter((s) => s.side === Side.FRONT).map((s) => s.unit).sort(), [10, 9]);
  mark("OccupancyService/PlanBooking");
  let replayHeader: string | null = null;
  const placeRequest = { rackId: rack.id, deviceId: first.id, side: Side.FRONT, unit: 9, requestId: `place-${unique}` };
  const placed = await operator.occupancy.placeDevice(placeRequest);
  const again = await operator.occupancy.placeDevice(placeRequest, { onHeader: (h) => (replayHeader = h.get("dcl-replay")) });
  assert.equal(again.id, placed.id);
  assert.equal(replayHeader, "true", "a replayed write says so in the dcl-replay header");
  mark("OccupancyService/PlaceDevice");
  const batchPlaced = await operator.occupancy.placeDevices({
    requests: [{ rackId: rack.id, deviceId: batch.devices[0].id, side: Side.FRONT, unit: 31, requestId: `place-E-${unique}` }],
  });
  assert.equal(batchPlaced.bookings.length, 1);
  assert.equal(batchPlaced.bookings[0].deviceId, batch.devices[0].id);
  mark("OccupancyService/PlaceDevices");
  // Released again: the capacity and delivery checks below count the first placement only.
  await operator.occupancy.releaseBooking({ bookingId: batchPlaced.bookings[0].id, reason: "batch checked", requestId: `release-E-${unique}` });
  const taken = await refusal(operator.occupancy.placeDevice({ rackId: rack.id, deviceId: second.id, side: Side.FRONT, unit: 10 }));
  assert.equal(reasonOf(taken), "UNIT_OCCUPIED");
  const detail = taken.findDetails(ErrorDetailSchema)[0];
  assert.equal(detail.reason, Reason.UNIT_OCCUPIED);
  assert.ok(detail.collidingSlots.some((s) => s.side === Side.FRONT && s.unit === 10));
  const view = await operator.occupancy.getRack({ rackId: rack.id });
  assert.ok(view.occupied.some((s) => s.slot?.unit === 9 && s.deviceId === first.id));
  mark("OccupancyService/GetRack");
  const capacity = await operator.occupancy.getRackCapacity({ rackId: rack.id });
  assert.equal(capacity.powerWatts?.knownUsed, 800n);
  mark("OccupancyService/GetRackCapacity");
  const siteCapacity = await operator.occupancy.getSiteCapacity({ siteId: site.id });
  assert.deepEqual(siteCapacity.dimensions.map((d) => d.dimension), ["units", "power", "cooling", "weight"]);
  mark("OccupancyService/GetSiteCapacity");
  const block = await operator.occupancy.blockUnits({ rackId: rack.id, bothSides: true, firstUnit: 40, lastUnit: 41, reason: "PDU", requestId: `block-${unique}` });
  assert.equal(block.kind, BookingKind.BOOKING_BLOCKING);
  const blocked = (await operator.occupancy.getRack({ rackId: rack.id })).occupied.filter((s) => s.bookingId === block.id);
  assert.deepEqual(blocked.map((s) => s.reason), ["PDU", "PDU", "PDU", "PDU"], "the elevation carries each booking's reason");
  mark("OccupancyService/BlockUnits");
  const held = await operator.occupancy.reserveUnits({ rackId: rack.id, side: Side.FRONT, firstUnit: 35, lastUnit: 36, reason: "order 42", requestId: `hold-${unique}` });
  assert.equal(held.kind, BookingKind.BOOKING_RESERVATION);
  mark("OccupancyService/ReserveUnits");
  const released = await operator.occupancy.releaseBooking({ bookingId: block.id, reason: "done", requestId: `release-${unique}` });
  assert.ok(released.releasedAt);
  mark("OccupancyService/ReleaseBooking");

  // Deliveries: where one half-depth 1U server would go, then its units reserved in one step.
  // The units held above are released first, so that the delivery has the rack to itself.
  await operator.occupancy.releaseBooking({ bookingId: held.id, reason: "order 42 off", requestId: `release-held-${unique}` });
  const delivery = {
    siteId: site.id,
    items: [{ what: { case: "spec" as const, value: { heightUnits: 1, depthClass: DepthClass.DEPTH_HALF, powerDrawWatts: 300, weightKg: 12, count: 1, label: "R650" } } }],
    constraints: { rackIds: [rack.id] },
  };
  const deliveryPlan = await operator.occupancy.planDelivery(delivery);
  assert.equal(deliveryPlan.planned.length, 1, deliveryPlan.unplaced.flatMap((u) => u.reasons).join("; "));
  assert.deepEqual(deliveryPlan.unplaced, []);
  mark("OccupancyService/PlanDelivery");
  const reservedDelivery = await operator.occupancy.reserveDelivery({
    what: { case: "planRequest", value: delivery },
    reason: "delivery Tuesday",
    requestId: `delivery-${unique}`,
  });
  assert.equal(reservedDelivery.reservations.length, 1);
  assert.equal(reservedDelivery.reservations[0].kind, BookingKind.BOOKING_RESERVATION);
  mark("OccupancyService/ReserveDelivery");
  await operator.occupancy.releaseBooking({ bookingId: reservedDelivery.reservations[0].id, reason: "delivery off", requestId: `release-delivery-${unique}` });

  // Moves: planned → completed, followed by WatchMove as a Connect server stream.
  const move = await operator.moves.startMove({ deviceId: first.id, destinationRackId: rack.id, destinationSide: Side.FRONT, destinationUnit: 20, requestId: `move-${unique}` });
  mark("MoveService/StartMove");
  // The allowed next states come from the server's table, for the console's buttons.
  assert.deepEqual(move.allowedTargets, [MoveState.MOVE_APPROVED, MoveState.MOVE_DRAFT, MoveState.MOVE_CANCELLED]);
  const events: MoveEvent[] = [];
  const watching = (async () => {
    for await (const event of operator.moves.watchMove({ moveId: move.id }, { timeoutMs: 60000 })) events.push(event);
  })();
  mark("MoveService/WatchMove");
  for (const target of [MoveState.MOVE_APPROVED, MoveState.MOVE_IN_PROGRESS, MoveState.MOVE_AWAITING_VERIFICATION, MoveState.MOVE_COMPLETED]) {
    const advanced = await operator.moves.advanceMove({ moveId: move.id, target, note: "test", requestId: `adv-${target}-${unique}` });
    assert.equal(advanced.state, target);
  }
  mark("MoveService/AdvanceMove");
  await watching; // ends by itself: the move is terminal
  assert.deepEqual(events.map((e) => e.toState), [MoveState.MOVE_PLANNED, MoveState.MOVE_APPROVED, MoveState.MOVE_IN_PROGRESS, MoveState.MOVE_AWAITING_VERIFICATION, MoveState.MOVE_COMPLETED]);
  const done = await operator.moves.getMove({ moveId: move.id });
  assert.equal(done.state, MoveState.MOVE_COMPLETED);
  assert.deepEqual(done.allowedTargets, [], "a terminal state offers no next step");
  mark("MoveService/GetMove");
  assert.ok((await operator.moves.listMoves({ deviceId: first.id })).moves.some((m) => m.id === move.id));
  mark("MoveService/ListMoves");
  const secondMove = await operator.moves.startMove({ deviceId: first.id, destinationRackId: rack.id, destinationSide: Side.FRONT, destinationUnit: 25 });
  const cancelled = await operator.moves.cancelMove({ moveId: secondMove.id, note: "changed our minds" });
  assert.equal(cancelled.state, MoveState.MOVE_CANCELLED);
  mark("MoveService/CancelMove");
  const wrongTransition = await refusal(operator.moves.advanceMove({ moveId: move.id, target: MoveState.MOVE_APPROVED }));
  assert.equal(wrongTransition.code, Code.FailedPrecondition);
  assert.equal(reasonOf(wrongTransition), "INVALID_TRANSITION");
  const history = await operator.moves.listLocationHistory({ deviceId: first.id });
  assert.ok(history.records.length >= 5);
  mark("MoveService/ListLocationHistory");
  const row = history.records.find((r) => r.event === "move_approved");
  assert.ok(row);
  const correction = await operator.moves.correctLocation({ correctsId: row.id, reason: "seen at U21 by the night shift", rackId: rack.id, side: Side.UNSPECIFIED, firstUnit: 21, lastUnit: 22 });
  assert.equal(correction.correctsId, row.id);
  mark("MoveService/CorrectLocation");

  // Reservations, with the commerce token: reserve, convert into a binding, end it; cancel.
  // Racked first, so that the customer can ask where their service runs.
  await operator.occupancy.placeDevice({ rackId: rack.id, deviceId: forSale.id, side: Side.FRONT, unit: 1 });
  const criteria = { siteId: site.id, vendor: "Dell" };
  // An order abandoned first (the machine is free again once cancelled), then the real one.
  const abandoned = await commerce.reservations.reserve({ idempotencyKey: `order2-${unique}`, criteria });
  const cancelledHold = await commerce.reservations.cancel({ reservation: { ref: { case: "idempotencyKey", value: `order2-${unique}` } }, reason: "customer left", requestId: `cancel-${unique}` });
  assert.equal(cancelledHold.reservation?.id, abandoned.reservation?.id);
  assert.equal(cancelledHold.reservation?.state, ReservationState.RESERVATION_CANCELLED);
  mark("ReservationService/Cancel");
  const reserved = await commerce.reservations.reserve({ idempotencyKey: `order-${unique}`, criteria });
  assert.equal(reserved.reservation?.deviceId, forSale.id);
  mark("ReservationService/Reserve");
  const ref = { ref: { case: "reservationId" as const, value: reserved.reservation!.id } };
  assert.equal((await commerce.reservations.getReservation({ reservation: ref })).state, ReservationState.RESERVATION_HELD);
  mark("ReservationService/GetReservation");
  assert.ok((await commerce.reservations.listReservations({ state: ReservationState.RESERVATION_HELD })).reservations.some((r) => r.id === reserved.reservation!.id));
  mark("ReservationService/ListReservations");
  const service = await commerce.reservations.createService({ kind: "dedicated", customer: "demo-customer", requestId: `svc-${unique}` });
  mark("ReservationService/CreateService");
  const converted = await commerce.reservations.convert({ reservation: ref, serviceId: service.id, requestId: `conv-${unique}` });
  assert.equal(converted.reservation?.state, ReservationState.RESERVATION_CONVERTED);
  mark("ReservationService/Convert");
  const location = await customer.reservations.getServiceLocation({ serviceId: service.id });
  assert.equal(location.deviceId, forSale.id);
  assert.equal(location.firstUnit, 1);
  mark("ReservationService/GetServiceLocation");
  const ended = await commerce.reservations.endBinding({ bindingId: converted.binding!.id, requestId: `end-${unique}` });
  assert.ok(ended.endedAt);
  mark("ReservationService/EndBinding");

  // Every RPC of the four services was called: the list comes from the generated descriptors.
  const { InventoryService } = await import("../src/gen/dcl/v1/inventory_pb");
  const { OccupancyService } = await import("../src/gen/dcl/v1/occupancy_pb");
  const { MoveService } = await import("../src/gen/dcl/v1/moves_pb");
  const { ReservationService } = await import("../src/gen/dcl/v1/reservation_pb");
  const all = [InventoryService, OccupancyService, MoveService, ReservationService].flatMap((s) =>
    s.methods.map((m) => `${s.name}/${m.name}`),
  );
  assert.equal(all.length, 42);
  assert.deepEqual(all.filter((name) => !called.has(name)), []);
});

test("the gate's refusals arrive as ConnectErrors with their codes and details", async () => {
  const wrong = clients("dcl_not-a-token");
  const unauthenticated = await refusal(wrong.inventory.listSites({}));
  assert.equal(unauthenticated.code, Code.Unauthenticated);
  assert.equal(reasonOf(unauthenticated), "UNAUTHENTICATED_CALLER");
  const none = await refusal(clients("").occupancy.getRack({ rackId: env("DCL_DEMO_RACK_FRA1_A01") }));
  assert.equal(none.code, Code.Unauthenticated);
  const denied = await refusal(customer.occupancy.getRack({ rackId: env("DCL_DEMO_RACK_FRA1_A01") }));
  assert.equal(denied.code, Code.PermissionDenied);
  assert.equal(reasonOf(denied), "ROLE_NOT_PERMITTED");
  const commerceWrites = await refusal(commerce.occupancy.placeDevice({ rackId: env("DCL_DEMO_RACK_FRA1_A01"), deviceId: env("DCL_DEMO_DEVICE_DL_0003"), side: Side.FRONT, unit: 1 }));
  assert.equal(commerceWrites.code, Code.PermissionDenied);
  const negative = await refusal(operator.inventory.listDevices({ pageSize: -1 }));
  assert.equal(negative.code, Code.InvalidArgument);
  assert.equal(negative.findDetails(ErrorDetailSchema)[0].metadata["field"], "page_size");
  const missing = await refusal(operator.moves.getMove({ moveId: "00000000-0000-0000-0000-000000000000" }));
  assert.equal(missing.code, Code.NotFound);
  const watchMissing = await refusal((async () => {
    for await (const _ of operator.moves.watchMove({ moveId: "00000000-0000-0000-0000-000000000000" })) void _;
  })());
  assert.equal(watchMissing.code, Code.NotFound, "a stream's error comes in its end-of-stream message");
});
