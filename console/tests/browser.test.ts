// The console in Debian's Chromium (playwright-core, never a downloaded browser), against the
// real servers: the design notes' two technicians racing for U9, a move followed live on a
// second screen, what each kind of token sees, axe-core on every page, and the screenshots of
// docs/console.md. Waits are on what a user would see, never on sleeps.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { Side } from "../src/gen/dcl/v1/common_pb";
import { Airflow, PowerPhase, ProcessState } from "../src/gen/dcl/v1/inventory_pb";
import { BookingKind, DepthClass, Numbering } from "../src/gen/dcl/v1/occupancy_pb";
import { clients, env } from "./clients";

const url = env("HTTP_URL");
const operatorToken = env("TOKEN_dc_operator");
const operator = clients(operatorToken);
const rackId = env("DCL_DEMO_RACK_FRA1_A01");
const screenshots = env("DCL_SCREENSHOT_DIR");
const rounds = Number(process.env.DCL_RACE_ROUNDS ?? "20");
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

// Each technician has a browser of their own, with a fresh profile.
const browsers: BrowserContext[] = [];
async function technician(width = 1280, height = 800): Promise<Page> {
  const profile = mkdtempSync(join(process.env.TEST_TMPDIR ?? tmpdir(), "chromium-profile-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    viewport: { width, height },
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  browsers.push(context);
  const page = context.pages()[0] ?? (await context.newPage());
  page.on("console", (message) => {
    if (message.type() === "error" && /Content Security Policy/i.test(message.text())) {
      throw new Error(`CSP violation: ${message.text()}`);
    }
  });
  return page;
}

async function signIn(page: Page, token: string, hash = "") {
  await page.goto(`${url}/${hash}`);
  await page.getByLabel("Token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
}

async function axe(page: Page, what: string) {
  await page.evaluate(axeSource);
  const result = await page.evaluate(async () => {
    // @ts-expect-error axe is the global the injected source defines
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v: { id: string; impact: string; nodes: unknown[] }) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length }));
  });
  const bad = result.filter((v: { impact: string }) => v.impact === "serious" || v.impact === "critical");
  assert.deepEqual(bad, [], `axe on ${what}: ${JSON.stringify(bad)}`);
}

async function releasePlacementsAtU9() {
  const rack = await operator.occupancy.getRack({ rackId });
  const ids = new Set(rack.occupied.filter((o) => o.slot!.unit >= 9 && o.slot!.unit <= 10).map((o) => o.bookingId));
  for (const bookingId of ids) await operator.occupancy.releaseBooking({ bookingId, reason: "next round" });
}

before(() => mkdirSync(screenshots, { recursive: true }));
after(async () => {
  for (const b of browsers) await b.close();
});

test("the server sends the console with a strict Content-Security-Policy and no cookie", async () => {
  const response = await fetch(`${url}/`);
  assert.equal(response.status, 200);
  const csp = response.headers.get("content-security-policy") ?? "";
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'self'/);
  assert.match(csp, /connect-src 'self'/);
  assert.equal(response.headers.get("set-cookie"), null);
});

test("two technicians choose U9 for a 2U server at once: one placement, the other sees U9 and U10 taken", async () => {
  const a = await technician();
  const b = await technician();
  await signIn(a, operatorToken, `#/racks/${rackId}`);
  await signIn(b, operatorToken, `#/racks/${rackId}`);
  const devices = [env("DCL_DEMO_DEVICE_HP_0001"), env("DCL_DEMO_DEVICE_HP_0002")];
  for (let round = 1; round <= rounds; round++) {
    const pages = [a, b];
    await Promise.all(
      pages.map(async (page, i) => {
        await page.getByRole("button", { name: "Front U9 free" }).click();
        await page.getByRole("combobox", { name: /^Device/ }).selectOption(devices[i]);
      }),
    );
    // Both press save at once.
    await Promise.all(pages.map((page) => page.getByRole("button", { name: "Place device" }).click()));
    const outcomes = await Promise.all(
      pages.map(async (page) => {
        const placed = page.getByRole("status").filter({ hasText: "Placed at front U9." });
        const refused = page.getByRole("alert").filter({ hasText: "Refused" });
        await placed.or(refused).waitFor();
        return (await placed.count()) > 0 ? "placed" : "refused";
      }),
    );
    assert.deepEqual([...outcomes].sort(), ["placed", "refused"], `round ${round}: ${outcomes}`);

    // Exactly one placement in the database, at front U9–U10.
    const rack = await operator.occupancy.getRack({ rackId });
    const atNine = rack.occupied.filter((o) => o.slot!.side === Side.FRONT && (o.slot!.unit === 9 || o.slot!.unit === 10));
    assert.equal(new Set(atNine.map((o) => o.bookingId)).size, 1, `round ${round}: one booking at front U9-U10`);
    assert.equal(atNine[0].kind, BookingKind.BOOKING_PLACEMENT);

    // The loser is told which units are taken, and exactly those are marked.
    const loser = pages[outcomes.indexOf("refused")];
    const alert = loser.getByRole("alert");
    await assert.doesNotReject(alert.filter({ hasText: "front U9" }).filter({ hasText: "front U10" }).waitFor());
    const named = [...((await alert.textContent()) ?? "").matchAll(/(front|rear) U(\d+)/g)].map((m) => `${m[1]}-${m[2]}`);
    const marked = await loser.locator("[data-collision]").evaluateAll((els) => els.map((e) => e.getAttribute("data-collision")));
    assert.deepEqual([...new Set(marked)].sort(), [...new Set(named)].sort(), `round ${round}: marked = named`);
    assert.ok(marked.includes("front-9") && marked.includes("front-10"), `round ${round}: ${marked}`);
    if (round === 1) {
      await loser.locator(".rack-layout").screenshot({ path: join(screenshots, "elevation-refusal.png") });
      await axe(loser, "the elevation with a refusal");
    }
    await releasePlacementsAtU9();
    await Promise.all(pages.map((page) => page.reload()));
    await Promise.all(pages.map((page) => page.getByRole("button", { name: "Front U9 free" }).waitFor()));
  }
});

test("a reservation released from a screen after a device was placed into it: refused, the placement stays", async () => {
  const reservation = await operator.occupancy.reserveUnits({ rackId, side: Side.FRONT, firstUnit: 36, lastUnit: 36, reason: "delivery on Tuesday" });
  const page = await technician();
  await signIn(page, operatorToken, `#/racks/${rackId}`);
  await page.getByRole("button", { name: /^Front U36: reservation/ }).click();
  const details = page.getByRole("region", { name: "Booking" });
  await details.getByText(`Booking ${reservation.id}`).waitFor();
  // Meanwhile, on the floor: the switch goes into the reserved unit (the whole reservation
  // becomes the placement and keeps its id). The screen still shows a reservation.
  const placed = await operator.occupancy.placeDevice({
    rackId,
    deviceId: env("DCL_DEMO_DEVICE_AR_0001"),
    side: Side.FRONT,
    unit: 36,
    reservationId: reservation.id,
  });
  assert.equal(placed.id, reservation.id);
  await page.getByLabel("Reason for the release").fill("delivery cancelled");
  await page.getByRole("button", { name: "Release" }).click();
  await page.getByRole("alert").filter({ hasText: "is a placement now, not a reservation" }).waitFor();
  const rack = await operator.occupancy.getRack({ rackId });
  const atUnit = rack.occupied.filter((o) => o.slot!.side === Side.FRONT && o.slot!.unit === 36);
  assert.deepEqual(
    atUnit.map((o) => [o.bookingId, o.kind]),
    [[reservation.id, BookingKind.BOOKING_PLACEMENT]],
    "the switch is still placed at front U36",
  );
  await operator.occupancy.releaseBooking({ bookingId: reservation.id, expectedKind: BookingKind.BOOKING_PLACEMENT, reason: "test done" });
});

test("a rack's capacity per feed with N-1, heat and airflow; a refusal marks the feed it would overload", async () => {
  // A rack of its own at a site of its own (the demo's lists stay as the other tests expect):
  // feeds A and B of 2,944 W each, a dual-PSU 1,000 W server and a single-PSU 400 W one on A.
  const unique = `${Date.now().toString(36)}-${process.pid}`;
  const site = await operator.inventory.createSite({ name: `CAP-${unique}`, requestId: `cap-site-${unique}` });
  const rack = await operator.inventory.createRack({
    requestId: `cap-rack-${unique}`,
    siteId: site.id,
    name: "CAP-R1",
    geometry: { firstUnit: 1, unitCount: 42, numbering: Numbering.ASCENDING, hasRear: true },
  });
  await operator.inventory.updateRack({
    requestId: `cap-up-${unique}`,
    rackId: rack.id,
    coolingBudgetWatts: 5000,
    airflow: Airflow.FRONT_TO_REAR,
    setSwitchPorts: true,
    switchPorts: [{ speed: "10g", count: 8 }],
  });
  await operator.inventory.setPowerFeeds({
    requestId: `cap-feeds-${unique}`,
    rackId: rack.id,
    feeds: ["A", "B"].map((name) => ({ name, voltage: 230, amperage: 16, phase: PowerPhase.SINGLE })),
  });
  const register = (serial: string, powerDrawWatts: number, powerPortCount: number) =>
    operator.inventory.registerDevice({
      requestId: `cap-${serial}-${unique}`,
      siteId: site.id,
      vendor: "Dell",
      model: "R650",
      serial: `${serial}-${unique}`,
      heightUnits: 1,
      depthClass: DepthClass.DEPTH_HALF,
      powerDrawWatts,
      powerPortCount,
      airflow: Airflow.FRONT_TO_REAR,
      networkPortsKnown: true,
      networkPorts: [{ speed: "10g", count: 2 }],
      initialState: ProcessState.PROCESS_NORMAL,
    });
  const dual = await register("DUAL", 1000, 2);
  const single = await register("SINGLE", 400, 1);
  const big = await register("BIG", 1600, 2);
  await operator.occupancy.placeDevice({ rackId: rack.id, deviceId: dual.id, side: Side.FRONT, unit: 1 });
  await operator.occupancy.placeDevice({ rackId: rack.id, deviceId: single.id, side: Side.FRONT, unit: 2 });

  const page = await technician();
  await signIn(page, operatorToken, `#/racks/${rack.id}`);
  const capacity = page.getByRole("region", { name: "Capacity" });
  const feeds = capacity.getByRole("table", { name: /Power feeds/ });
  await feeds.waitFor();
  // Available, used, with A lost, with B lost, headroom under N-1.
  const cells = (name: string) => feeds.getByRole("row", { name: new RegExp(`^${name} `) }).getByRole("cell").allTextContents();
  assert.deepEqual(await cells("A"), ["2,944 W", "900 W", "–", "1,400 W", "1,544 W"]);
  assert.deepEqual(await cells("B"), ["2,944 W", "500 W", "1,000 W", "–", "1,944 W"]);
  await capacity.getByText("1400 W counted of 5000 W budget").waitFor();
  await capacity.getByText("Airflow: front-to-rear").waitFor();
  await capacity.getByText("10g: 4 of 8 used").waitFor();

  // The 1,600 W server placed from the form: A would carry 3,000 W with B lost. The refusal says
  // so and marks exactly that cell, as UNIT_OCCUPIED marks its units.
  await page.getByRole("button", { name: "Front U10 free" }).click();
  await page.getByRole("combobox", { name: /^Device/ }).selectOption(big.id);
  await page.getByRole("button", { name: "Place device" }).click();
  const alert = page.getByRole("alert").filter({ hasText: "Refused (FEED_REDUNDANCY_LOST)" });
  await alert.filter({ hasText: "with feed B lost, feed A would carry 3000 W of its 2944 W" }).waitFor();
  await alert.getByText("Over: feed A with feed B lost (marked in the capacity).").waitFor();
  const marked = await page.locator("[data-over]").evaluateAll((els) => els.map((e) => e.getAttribute("data-over")));
  assert.deepEqual(marked, ["feed-A-lost-B"]);
  await page.locator(".capacity").screenshot({ path: join(screenshots, "capacity-feeds.png") });
  await axe(page, "the capacity panel with a refusal");
  // Nothing was written: two placements, as before.
  const after = await operator.occupancy.getRack({ rackId: rack.id });
  assert.equal(new Set(after.occupied.map((o) => o.bookingId)).size, 2);
});

test("a move driven from planned to completed in one page, followed live by a second page", async () => {
  const device = env("DCL_DEMO_DEVICE_DL_0003");
  await operator.occupancy.placeDevice({ rackId, deviceId: device, side: Side.FRONT, unit: 30 });
  const move = await operator.moves.startMove({ deviceId: device, destinationRackId: rackId, destinationSide: Side.FRONT, destinationUnit: 33, note: "browser test" });
  const driver = await technician();
  const follower = await technician();
  await signIn(driver, operatorToken, "#/moves");
  await signIn(follower, operatorToken, "#/moves");
  const card = (page: Page, state: string) => page.locator(`section[data-state="${state}"] article[data-move="${move.id}"]`);
  await card(driver, "planned").waitFor();
  await card(follower, "planned").waitFor();
  await axe(follower, "the moves board");
  for (const [button, state] of [
    ["To approved", "approved"],
    ["To in progress", "in progress"],
    ["To awaiting verification", "awaiting verification"],
    ["To completed", "completed"],
  ]) {
    await driver.locator(`article[data-move="${move.id}"]`).getByRole("button", { name: button }).click();
    await card(driver, state).waitFor();
    await card(follower, state).waitFor(); // without a reload: through WatchMove
    if (state === "awaiting verification") await follower.locator(".board").screenshot({ path: join(screenshots, "moves-board.png") });
  }
  assert.equal(await card(follower, "completed").getByRole("button", { name: /^To / }).count(), 0, "a terminal move offers no next step");
  await follower.getByRole("button", { name: "History" }).first().waitFor();
});

test("a wrong token is told so; a customer token sees no rack pages; a commerce token reads reservations without write buttons", async () => {
  const page = await technician();
  await signIn(page, "dcl_this-is-not-a-token");
  await page.getByRole("alert").filter({ hasText: "not accepted" }).waitFor();
  await axe(page, "the sign-in page with an error");

  const customer = await technician();
  await signIn(customer, env("TOKEN_customer"), `#/racks/${rackId}`);
  await customer.getByRole("alert").filter({ hasText: "(role customer) may not see sites" }).waitFor();
  assert.equal(await customer.getByRole("button", { name: /free/ }).count(), 0);
  assert.equal(await customer.getByRole("navigation").getByRole("link").count(), 0);

  const commerce = await technician(768, 1024);
  await signIn(commerce, env("TOKEN_commerce"));
  await commerce.getByRole("heading", { name: "Reservations" }).waitFor();
  await commerce.getByRole("table").waitFor();
  await axe(commerce, "reservations (commerce)");
  const buttons = await commerce.getByRole("button").allTextContents();
  assert.deepEqual(buttons, ["Sign out"], "reservations are read-only for commerce");
  await commerce.goto(`${url}/#/racks/${rackId}`);
  await commerce.getByText("Nothing here").waitFor();
  assert.equal(await commerce.getByRole("button", { name: /free/ }).count(), 0);
  await commerce.goto(`${url}/#/devices`);
  await commerce.getByRole("table").waitFor();
  assert.deepEqual((await commerce.getByRole("button").allTextContents()).sort(), ["Filter", "Sign out"]);
});

test("every operator page passes axe-core and works at 768 pixels and by keyboard", async () => {
  const page = await technician(768, 1024);
  await signIn(page, operatorToken, "#/sites");
  await page.getByRole("link", { name: "FRA1-A01" }).waitFor();
  await axe(page, "sites and racks");
  await page.getByRole("link", { name: "FRA1-A02" }).click();
  await page.getByRole("heading", { name: "Rack FRA1-A02" }).waitFor();
  await axe(page, "a descending rack");
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 768, `the rack page fits a 768-pixel tablet (scroll width ${width})`);
  // By keyboard: a free unit opens the form with Enter, the form is reachable with Tab.
  await page.getByRole("button", { name: "Front U5 free" }).focus();
  await page.keyboard.press("Enter");
  await page.getByRole("form", { name: "Book units" }).waitFor();
  await page.getByLabel("Block units").check();
  await page.getByLabel("Reason").fill("PDU swap");
  await page.getByRole("button", { name: "Preview" }).click();
  await page.locator('[data-preview="front-5"]').waitFor();
  await page.getByRole("button", { name: "Block", exact: true }).press("Enter");
  await page.getByRole("status").filter({ hasText: "Blocked U5" }).waitFor();
  await page.getByRole("button", { name: /^Front U5: blocking/ }).click();
  await page.getByRole("region", { name: "Booking" }).getByText("Reason: PDU swap").waitFor();
  await page.getByLabel("Reason for the release").fill("done");
  await page.getByRole("button", { name: "Release" }).click();
  await page.getByRole("button", { name: "Front U5 free" }).waitFor();
  await page.getByRole("region", { name: "Capacity" }).waitFor();
  await page.goto(`${url}/#/devices`);
  await page.getByRole("table").waitFor();
  await page.getByLabel("Vendor").fill("Arista");
  await page.getByRole("button", { name: "Filter" }).click();
  await page.getByRole("table").getByText("2 devices").waitFor();
  await axe(page, "devices");
  await page.goto(`${url}/#/moves`);
  await page.getByRole("heading", { name: "Moves" }).waitFor();
  await axe(page, "the moves board at 768 pixels");
});
