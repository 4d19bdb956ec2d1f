// The demo page in a real browser: Debian's Chromium driven by
// playwright-core. Run by browser_test.go (go test ./tests/browser/), which
// starts the server; by hand (queues.yaml: demoQueues of browser_test.go):
//
//   go run ./cmd/matchgate serve --config queues.yaml --admin-token "$ADMIN_TOKEN" &
//   cd tests/browser && npm ci && MATCHGATE_URL=http://127.0.0.1:8080 ADMIN_TOKEN="$ADMIN_TOKEN" node demo.mjs
//
// Environment: MATCHGATE_URL (required), CHROMIUM (default /usr/bin/chromium),
// ARTIFACTS (screenshot folder, default ../../test-artifacts/browser),
// ADMIN_TOKEN (the server's admin token: the token the page shows is
// claimed with it).
//
// The server needs the demo queues and an admission queue `launch` at rate 1
// (browser_test.go writes that queue file). It checks: two pages join the
// same queue and both show the match; a page that reloads while waiting
// still receives its match; the lobby shows a queue's depth; simulated
// players added from the page fill a 4-player match; the lobby's trending
// now panel (the board trending, which the server must have, fed by events
// this script posts) shows the top items and follows new events without a
// reload; the lobby lists the
// admission queue apart with an Enter action; the waiting room shows the
// place's rank, ETA and progress as the line moves, then the token when
// READY, which the protected downstream can claim; leaving ends the place;
// a reload keeps it; in the provider queue advice a provider goes online
// from its own view (and again after a reload) and the lobby counts it, a requester no provider fits
// is told why while it waits, is offered when the provider changes, sees
// the provider and the score, sees its session start on an accept, the
// provider ends it; a decline puts a requester back in its place and never
// to the same provider again, and an offer withdrawn
// by the provider going offline puts the requester back to waiting;
// the page fits a phone; no console errors on any page.
// Screenshots go to ARTIFACTS.

import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const BASE = process.env.MATCHGATE_URL;
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ARTIFACTS = path.resolve(process.env.ARTIFACTS || path.join(here, '../../test-artifacts/browser'));
const WAIT = 15000;
const ADMIN = process.env.ADMIN_TOKEN || '';

if (!BASE || !ADMIN) {
  console.error('MATCHGATE_URL (e.g. http://127.0.0.1:8080) and ADMIN_TOKEN (the server\'s --admin-token) must be set');
  process.exit(2);
}
mkdirSync(ARTIFACTS, { recursive: true });

const problems = [];
let passed = 0;
let failed = 0;

/** step runs one named check and records its outcome. */
async function step(name, fn) {
  const start = Date.now();
  try {
    await fn();
    passed++;
    console.log(`ok   ${name} (${Date.now() - start} ms)`);
  } catch (err) {
    failed++;
    console.log(`FAIL ${name}: ${err && err.stack || err}`);
    throw err;
  }
}

function expect(cond, message) {
  if (!cond) throw new Error(message);
}

const userDataDir = mkdtempSync(path.join(tmpdir(), 'matchgate-chromium-'));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: CHROMIUM,
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1280, height: 860 },
  deviceScaleFactor: 1,
});

/** openPage opens a tab on the demo and records its console errors. */
async function openPage(label) {
  const page = await context.newPage();
  page.on('console', (msg) => {
    if (msg.type() === 'error' || msg.type() === 'warning') {
      const text = `${label}: console.${msg.type()}: ${msg.text()}`;
      if (msg.type() === 'error') problems.push(text);
      else console.log(text);
    }
  });
  page.on('response', (res) => {
    if (res.status() >= 400) console.log(`${label}: ${res.request().method()} ${res.url()} → ${res.status()}`);
  });
  page.on('pageerror', (err) => problems.push(`${label}: uncaught: ${err.message}`));
  page.on('requestfailed', (req) => {
    // A WebSocket or fetch torn down by a reload is not a failure.
    const why = req.failure() && req.failure().errorText;
    if (why !== 'net::ERR_ABORTED') problems.push(`${label}: request failed: ${req.url()} ${why}`);
  });
  await page.goto(BASE + '/', { waitUntil: 'load' });
  return page;
}

async function signIn(page, name, skill) {
  await page.fill('#name', name);
  await page.$eval('#skill', (el, v) => { el.value = String(v); el.dispatchEvent(new Event('input')); }, skill);
  await page.click('#signin-btn');
  await page.waitForSelector('#conn.on', { timeout: WAIT });
  await page.waitForSelector('#play:not([hidden])', { timeout: WAIT });
}

async function pickQueue(page, queue, region) {
  await page.click(`.queue-option[data-queue="${queue}"]`);
  if (region) await page.selectOption('#region', region);
  await page.waitForSelector(`.queue-option.selected[data-queue="${queue}"]`, { timeout: WAIT });
}

async function join(page) {
  await page.click('#join');
  await page.waitForSelector('#status[data-state="WAITING"]', { timeout: WAIT });
}

async function matchPlayers(page, n, timeout = WAIT) {
  await page.waitForSelector('#status[data-state="MATCHED"]', { timeout });
  await page.waitForSelector('#match-card:not([hidden])', { timeout: WAIT });
  await page.waitForFunction((k) => document.querySelectorAll('#players li').length === k, n, { timeout: WAIT });
  return page.$$eval('#players li', (els) => els.map((e) => e.textContent));
}

async function userId(page) {
  return page.evaluate(() => sessionStorage.getItem('mg.userId'));
}

/** rest is one call of the REST API from the test itself (a player or the downstream). */
async function rest(method, path, token, body) {
  const headers = { Accept: 'application/json' };
  if (token) headers.Authorization = 'Bearer ' + token;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(BASE + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** play posts n plays of each item to the board trending, as another service would. */
async function play(tag, plays) {
  const at = new Date().toISOString();
  const events = Object.entries(plays).flatMap(([item, n]) => Array.from({ length: n },
    (_, i) => ({ id: `${tag}-${item}-${i}`, item, metric: 'plays', value: 1, at })));
  const r = await rest('POST', '/v1/rankings/trending/events', ADMIN, { events });
  expect(r.status === 202, `events: ${r.status} ${JSON.stringify(r.body)}`);
}

/** trendingOrder is the items the trending panel lists, in order (runs in the page). */
function trendingOrder() {
  const box = document.getElementById('trending');
  if (!box || box.hidden) return null;
  return [...box.querySelectorAll('#trending-list li[data-item]')].map((li) =>
    `${li.dataset.item} ${li.querySelector('.t-score').textContent}`).join(', ');
}

/** trendingShows reports whether the trending panel lists want (runs in the page: the page's CSP allows no eval). */
function trendingShows(want) {
  const box = document.getElementById('trending');
  if (!box || box.hidden) return false;
  return [...box.querySelectorAll('#trending-list li[data-item]')].map((li) =>
    `${li.dataset.item} ${li.querySelector('.t-score').textContent}`).join(', ') === want;
}

/** waitTrending waits until the page's trending panel lists want. */
async function waitTrending(page, want) {
  await page.waitForFunction(trendingShows, want, { timeout: WAIT })
    .catch(async (e) => { throw new Error(`trending shows ${await page.evaluate(trendingOrder)}; want ${want}: ${e.message}`); });
}

/** enterAll takes a place in launch for each guest, all at once. */
async function enterAll(guests) {
  await Promise.all(guests.map(async (g) => {
    const r = await rest('POST', '/v1/admission/launch/enter', g.token, {});
    expect(r.status === 202, `enter: ${r.status} ${JSON.stringify(r.body)}`);
  }));
}

/** readPlace reads a place of the waiting room as the page shows it (runs in the page). */
function readPlace(sel) {
  const e = document.querySelector(sel);
  if (!e) return null;
  const text = (c) => (e.querySelector(c)?.textContent || '').trim();
  const meter = e.querySelector('.adm-meter');
  const m = /^Number (\d+) of (\d+)/.exec(text('.adm-rank'));
  return {
    status: e.dataset.status, rank: text('.adm-rank'), number: m ? Number(m[1]) : null, eta: text('.adm-eta'),
    progress: meter && !meter.hidden ? Number(meter.getAttribute('aria-valuenow')) : null,
    token: text('.adm-token'), expiry: text('.adm-expiry'), title: text('.adm-title'),
  };
}

async function shot(page, name, opts = {}) {
  const file = path.join(ARTIFACTS, name);
  await page.screenshot({ path: file, ...opts });
  console.log(`     screenshot ${file}`);
}

let exitCode = 0;
try {
  const a = await openPage('A');
  await step('the page loads and lists the queues', async () => {
    await a.waitForSelector('#lobby-body tr[data-queue="duel"]', { timeout: WAIT });
    expect(await a.isVisible('#signin'), 'sign-in is not shown');
    await shot(a, '01-signin.png');
  });

  const b = await openPage('B');
  await step('two guests sign in', async () => {
    await signIn(a, 'Ada', 1500);
    // Typed with an RTL override and a zero-width joiner: the server
    // cleans the name, and the page shows what the others will see.
    await signIn(b, '\u202eAlan\u200d ', 1510);
    expect((await a.textContent('#me-name')) === 'Ada', 'A shows its name');
    const shownB = await b.textContent('#me-name');
    expect(shownB === 'Alan', `B shows its name as the server cleaned it: ${JSON.stringify(shownB)}`);
  });

  await step('the lobby\'s trending now shows the trending board and follows new events live', async () => {
    await a.waitForSelector('#trending:not([hidden])', { timeout: WAIT });
    await play('t1', { 'space-duel': 3, royale: 1 });
    await waitTrending(a, 'space-duel 3, royale 1');
    await a.evaluate(() => { window.sameDocument = true; });
    await play('t2', { royale: 4, chess: 1 });
    await waitTrending(a, 'royale 5, space-duel 3, chess 1');
    expect(await a.evaluate(() => window.sameDocument === true), 'the page reloaded to show the new order');
    // B's socket is subscribed too, and was pushed the same.
    await waitTrending(b, 'royale 5, space-duel 3, chess 1');
    await shot(a, '02a-trending.png');
  });

  await step('two pages join duel and both show the match', async () => {
    await pickQueue(a, 'duel');
    await join(a);
    await a.waitForFunction(() => /^0:0\d$/.test(document.getElementById('fact-waited')?.textContent || ''), null, { timeout: WAIT });
    await shot(a, '02-waiting.png');
    await pickQueue(b, 'duel');
    await b.click('#join');
    const [pa, pb] = await Promise.all([matchPlayers(a, 2), matchPlayers(b, 2)]);
    const [ua, ub] = [await userId(a), await userId(b)];
    for (const [label, players] of [['A', pa], ['B', pb]]) {
      expect(players.some((p) => p.includes(ua)) && players.some((p) => p.includes(ub)),
        `${label} does not list both players: ${players}`);
    }
    // Each page is told the other's name by the server (a page knows only
    // its own): A shows Alan, B shows Ada.
    const seat = (players, id) => players.find((p) => p.includes(id)) || '';
    expect(seat(pa, ub).includes('Alan'), `A shows B as ${JSON.stringify(seat(pa, ub))}, not by the name B typed`);
    expect(seat(pb, ua).includes('Ada'), `B shows A as ${JSON.stringify(seat(pb, ua))}, not by the name A typed`);
    await shot(a, '03-matched.png');
  });

  await step('the lobby shows the depth of a queue', async () => {
    await pickQueue(a, 'chat-pairs');
    await join(a);
    await b.waitForFunction(() => {
      const el = document.querySelector('#lobby-body tr[data-queue="chat-pairs"] .depth-pill');
      return el && el.textContent === '1';
    }, null, { timeout: WAIT });
    await shot(b, '04-lobby.png');
  });

  await step('a page reloaded while waiting still receives its match', async () => {
    const before = await a.evaluate(() => document.getElementById('status').dataset.state);
    expect(before === 'WAITING', `A is ${before}, not WAITING`);
    await a.reload({ waitUntil: 'load' });
    await a.waitForSelector('#conn.on', { timeout: WAIT });
    await a.waitForSelector('#status[data-state="WAITING"]', { timeout: WAIT });
    expect(await a.isVisible('#cancel'), 'the reloaded page cannot cancel its ticket');
    await pickQueue(b, 'chat-pairs');
    await b.click('#join');
    const [pa] = await Promise.all([matchPlayers(a, 2), matchPlayers(b, 2)]);
    expect(pa.some((p) => p.includes('guest-')), `players: ${pa}`);
    await shot(a, '05-matched-after-reload.png');
  });

  await step('simulated players from the page fill a ranked match of 4', async () => {
    await pickQueue(a, 'ranked', 'eu');
    await join(a);
    await a.fill('#sim-n', '3');
    await a.click('#sim-add');
    const players = await matchPlayers(a, 4, 40000);
    expect(players.length === 4, `players: ${players}`);
    await a.waitForFunction(() => /matched/.test(document.getElementById('sim-status').textContent), null, { timeout: WAIT });
    // The lobby follows: nobody is left waiting in ranked.
    await a.waitForFunction(() => {
      const el = document.querySelector('#lobby-body tr[data-queue="ranked"] .depth-pill');
      return el && el.textContent === '0';
    }, null, { timeout: WAIT });
    await shot(a, '06-ranked-with-simulated-players.png');
  });

  const place = '#adm-places .adm-place[data-queue="launch"]';
  const enter = '#lobby-body tr[data-queue="launch"] button.adm-enter';
  const waiters = [];
  let admitted = '';

  await step('the lobby lists the admission queue apart, with an Enter action', async () => {
    const listed = (await rest('GET', '/v1/queues')).body.queues.find((q) => q.name === 'launch');
    expect(listed && listed.kind === 'admission', `GET /v1/queues does not list the admission queue launch: ${JSON.stringify(listed)}`);
    await a.waitForSelector(`#lobby-body tr[data-queue="launch"][data-kind="admission"] button.adm-enter:not([disabled])`, { timeout: WAIT });
    const kind = await a.textContent('#lobby-body tr[data-queue="launch"] .kind-tag');
    expect(/waiting room/i.test(kind), `kind shown: ${kind}`);
    expect(!(await a.$('.queue-option[data-queue="launch"]')), 'the admission queue is offered to join for a match');
  });

  await step('the waiting room shows rank, ETA and progress as the line moves, then the token', async () => {
    // Seven waiters ahead, admitted one a second: the page waits about 7 s.
    for (let i = 0; i < 7; i++) {
      const g = await rest('POST', '/v1/auth/guest', null, { name: `Waiter ${i}`, skill: 1500 });
      expect(g.status === 200, `guest: ${g.status}`);
      waiters.push(g.body);
    }
    await enterAll(waiters);
    await a.click(enter);
    await a.waitForSelector(`${place}[data-status="WAITING"]`, { timeout: WAIT });
    const first = await a.evaluate(readPlace, place);
    expect(first.number !== null, `rank shown: ${JSON.stringify(first)}`);
    expect(first.progress !== null, 'no progress bar');
    expect(/^About \d+(\.\d)? (s|min|h)(, (at least )?\d.*)?$/.test(first.eta) || first.eta === 'Any moment now', `ETA shown: ${first.eta}`);
    await shot(a, '07-waiting-room.png');
    if (first.number >= 4) {
      // Still waiting, nearer the front: the rank went down, the bar up.
      await a.waitForFunction(([sel, n]) => {
        const e = document.querySelector(sel);
        const m = e && /^Number (\d+) of/.exec(e.querySelector('.adm-rank').textContent);
        return e && e.dataset.status === 'WAITING' && m && Number(m[1]) < n;
      }, [place, first.number], { timeout: WAIT });
      const later = await a.evaluate(readPlace, place);
      expect(later.progress > first.progress, `progress ${first.progress} → ${later.progress} at ${later.rank}`);
    } else {
      console.log(`     entered at ${first.rank}: too near the front to see the line move`);
    }
    await a.waitForSelector(`${place}[data-status="READY"]`, { timeout: 30000 });
    const ready = await a.evaluate(readPlace, place);
    expect(/^[0-9a-f]{32}$/.test(ready.token), `token: ${ready.token}`);
    expect(/^valid for \d+:\d\d$/.test(ready.expiry), `expiry: ${ready.expiry}`);
    expect(ready.progress === 100, `progress when READY: ${ready.progress}`);
    admitted = ready.token;
    // The token is the server's: the protected downstream claims it for this user.
    const claim = await rest('POST', '/v1/admission/launch/tokens/claim', ADMIN, { token: admitted });
    expect(claim.status === 200 && claim.body.userId === await userId(a), `claim: ${claim.status} ${JSON.stringify(claim.body)}`);
    const release = await rest('POST', '/v1/admission/launch/tokens/release', ADMIN, { token: admitted });
    expect(release.status === 200, `release: ${release.status}`);
    await shot(a, '08-waiting-room-ready.png');
  });

  await step('the lobby shows the queue\'s ETA error when the listing has it', async () => {
    const listed = (await rest('GET', '/v1/queues')).body.queues.find((q) => q.name === 'launch');
    if (!listed.etaError) {
      console.log('     GET /v1/queues has no etaError for launch: its rendering is not checked');
      return;
    }
    // Eight were admitted just now: the error is measured over them.
    const measured = Number(listed.etaError.admissions ?? listed.etaError.count) > 0;
    const want = measured ? /^ETA error \d+% median, \d+% p90 \(\d+ admitted\)$/ : /^ETA error/;
    await a.waitForFunction((re) => new RegExp(re).test(document.querySelector('#lobby-body tr[data-queue="launch"] .lobby-eta-error')?.textContent || ''),
      want.source, { timeout: WAIT });
    expect(new RegExp(want.source).test(await a.textContent(`${place} .adm-eta-error`)), 'the waiting room does not show the ETA error');
  });

  await step('leaving gives the place up', async () => {
    await a.click(`${place} button.adm-leave`);
    await a.waitForSelector(`${place}[data-status="ENDED"]`, { timeout: WAIT });
    const ended = await a.evaluate(readPlace, place);
    expect(/left/i.test(ended.title), `title: ${ended.title}`);
    const mine = await a.evaluate(() => sessionStorage.getItem('mg.token'));
    const pos = await rest('GET', '/v1/admission/launch/position', mine);
    expect(pos.status === 200 && pos.body.position.status === 'NOT_ENTERED', `position: ${JSON.stringify(pos.body)}`);
    const claim = await rest('POST', '/v1/admission/launch/tokens/claim', ADMIN, { token: admitted });
    expect(claim.status === 404, `the token of a place given up is claimed: ${claim.status}`);
  });

  await step('a reload keeps the place in the waiting room, and leave works from there', async () => {
    await Promise.all(waiters.map(async (g) => {
      const left = await rest('DELETE', '/v1/admission/launch', g.token);
      expect(left.status === 200, `leave: ${left.status}`);
    }));
    await enterAll(waiters);
    await a.click(enter);
    await a.waitForSelector(`${place}[data-status="WAITING"]`, { timeout: WAIT });
    const before = await a.evaluate(readPlace, place);
    await a.reload({ waitUntil: 'load' });
    await a.waitForSelector('#conn.on', { timeout: WAIT });
    // Seven ahead at one a second: READY is possible by now on a slow machine.
    await a.waitForSelector(`${place}[data-status="WAITING"], ${place}[data-status="READY"]`, { timeout: WAIT });
    const after = await a.evaluate(readPlace, place);
    expect(after.status === 'READY' || after.number <= before.number, `before the reload ${before.rank}, after ${after.rank}`);
    await shot(a, '09-waiting-room-after-reload.png');
    await a.click(`${place} button.adm-leave`);
    await a.waitForSelector(`${place}[data-status="ENDED"]`, { timeout: WAIT });
    const mine = await a.evaluate(() => sessionStorage.getItem('mg.token'));
    const pos = await rest('GET', '/v1/admission/launch/position', mine);
    expect(pos.body.position.status === 'NOT_ENTERED', `position after leaving: ${JSON.stringify(pos.body)}`);
    await a.click(`${place} button.adm-dismiss`);
    await a.waitForSelector('#admission-card', { state: 'hidden', timeout: WAIT });
  });

  // The provider queue advice: one page gives advice, page B asks for it.
  const p = await openPage('P');
  const offers = '#p-offers .p-item';
  let providerId = '';
  let requesterId = '';
  const providerTitle = () => p.textContent('#p-title');

  await step('a provider goes online in advice from the form, and the lobby counts it', async () => {
    await p.waitForSelector('#lobby-body tr[data-queue="advice"][data-kind="provider"]', { timeout: WAIT });
    await p.click('#tab-provider');
    await p.waitForSelector('#provider-card', { state: 'visible', timeout: WAIT });
    expect(!(await p.isVisible('#signin')), 'the provider view still shows the player\'s sign-in');
    await p.waitForFunction(() => document.getElementById('p-queue').value === 'advice', null, { timeout: WAIT });
    await p.fill('#p-capacity', '2');
    await p.fill('#p-languages', 'en, fr');
    await p.fill('#p-specialties', 'tax, legal');
    await p.fill('#p-sessions', 'video, chat');
    await p.$eval('#p-rating', (el) => { el.value = '4.5'; el.dispatchEvent(new Event('input')); });
    await p.click('#p-online');
    await p.waitForSelector('#provider-card[data-online="true"]', { timeout: WAIT });
    const title = await providerTitle();
    expect(/^Online in advice — 0 of 2 slots in use$/.test(title), `title: ${title}`);
    await p.waitForSelector('#conn.on', { timeout: WAIT }); // the provider's own socket
    providerId = await p.evaluate(() => sessionStorage.getItem('mg.puserId'));
    // A reload keeps the tab, the guest and its form, and goes online again.
    await p.reload({ waitUntil: 'load' });
    await p.waitForSelector('#provider-card[data-online="true"]', { state: 'visible', timeout: WAIT });
    expect(await p.evaluate(() => sessionStorage.getItem('mg.puserId')) === providerId, 'the reload made a new provider');
    expect((await p.inputValue('#p-languages')) === 'en, fr', 'the reload lost the form');
    const token = await p.evaluate(() => sessionStorage.getItem('mg.ptoken'));
    const pres = await rest('GET', '/v1/presence/providers?queue=advice', token);
    expect(pres.status === 200 && pres.body.online.some((x) => x.userId === providerId && x.capacity === 2
      && x.attributes.languages.join() === 'en,fr' && x.attributes.rating === 4.5), `presence: ${JSON.stringify(pres.body)}`);
    await b.waitForFunction(() => /^1 online · 0 busy$/.test(document.querySelector('#lobby-body tr[data-queue="advice"] .lobby-providers')?.textContent || ''),
      null, { timeout: WAIT });
    await shot(p, '11-provider-online.png');
  });

  await step('a requester no provider fits is told why while waiting; the provider changes and is offered it', async () => {
    requesterId = await userId(b);
    await pickQueue(b, 'advice');
    expect(await b.isVisible('#prefs'), 'joining advice does not ask what the requester needs');
    await b.selectOption('#pref-language', 'de');
    await b.selectOption('#pref-specialty', 'tax');
    await b.selectOption('#pref-session', 'video');
    await b.selectOption('#pref-rating', '4');
    await join(b);
    // Nobody speaks German: the explanation, polled over REST, says so.
    await b.waitForFunction(() => /without language de/.test(document.getElementById('fact-noprovider')?.textContent || ''), null, { timeout: WAIT });
    const relaxed = await b.textContent('#fact-relaxed');
    expect(relaxed === 'nothing yet', `relaxed after a few seconds: ${relaxed}`);
    const asked = await b.textContent('#fact-asked');
    expect(asked === 'de · tax · video · rating ≥ 4', `asked for: ${asked}`);
    await shot(b, '12-requester-waiting.png');
    await p.fill('#p-languages', 'en, fr, de');
    await p.click('#p-update');
    const offer = `${offers}[data-status="OFFERED"][data-requester="${requesterId}"]`;
    await p.waitForSelector(offer, { timeout: WAIT });
    const seen = await p.$eval(offer, (e) => ({
      score: e.querySelector('.p-score').textContent, parts: e.querySelector('.p-parts').textContent,
      countdown: e.querySelector('.p-countdown').textContent, who: e.querySelector('.p-requester').textContent,
    }));
    expect(/^score \d+\.\d\d$/.test(seen.score), `score: ${seen.score}`);
    expect(/specialty 2\.00/.test(seen.parts) && /rating 0\.90/.test(seen.parts), `parts: ${seen.parts}`);
    expect(/^Accept within (1[0-5]|[1-9]) s$/.test(seen.countdown), `countdown: ${seen.countdown}`);
    expect(seen.who.includes(requesterId) || seen.who === 'Alan', `requester shown: ${seen.who}`);
    // The requester sees the provider and the score while it decides.
    await b.waitForSelector('#match-card[data-state="PENDING_ACCEPT"]', { timeout: WAIT });
    expect((await b.textContent('#fact-provider')) === providerId, 'the requester does not see the provider');
    expect((await b.textContent('#fact-score')) === seen.score.replace('score ', ''), 'the requester sees another score');
    expect(!(await b.isVisible('#accept')), 'the requester is asked to accept its own provider');
    await shot(p, '13-provider-offer.png');
  });

  await step('the provider accepts: the requester sees its session start; the provider ends it', async () => {
    const offer = `${offers}[data-status="OFFERED"][data-requester="${requesterId}"]`;
    await p.click(`${offer} button.p-accept`);
    await p.waitForSelector(`#p-running .p-item[data-status="ACCEPTED"][data-requester="${requesterId}"]`, { timeout: WAIT });
    await b.waitForSelector('#match-card[data-state="READY"]', { timeout: WAIT });
    const started = await b.textContent('#status-title');
    expect(started === `Your session with ${providerId} started`, `requester: ${started}`);
    await p.waitForFunction(() => /1 of 2 slots in use/.test(document.getElementById('p-title').textContent), null, { timeout: WAIT });
    await shot(b, '14-requester-session.png');
    await shot(p, '15-provider-session.png');
    await p.click(`#p-running .p-item[data-requester="${requesterId}"] button.p-end`);
    await p.waitForSelector(`#p-ended .p-item[data-status="ENDED"][data-requester="${requesterId}"]`, { timeout: WAIT });
    await p.waitForFunction(() => /0 of 2 slots in use/.test(document.getElementById('p-title').textContent), null, { timeout: WAIT });
    expect(!(await p.$('#p-running .p-item')), 'an ended session is still listed as running');
  });

  await step('the provider declines: the requester goes back to its place, not to that provider again', async () => {
    await b.click('#join');
    const offer = `${offers}[data-status="OFFERED"][data-requester="${requesterId}"]`;
    await p.waitForSelector(offer, { timeout: WAIT });
    const first = await p.$eval(offer, (e) => e.dataset.id);
    await p.click(`${offer} button.p-decline`);
    await p.waitForSelector(`#p-ended .p-item[data-id="${first}"][data-status="DECLINED"]`, { timeout: WAIT });
    await b.waitForSelector('#status[data-state="WAITING"]', { timeout: WAIT });
    // The only provider refused it: it waits, told so, and is not offered
    // to the same provider again.
    await b.waitForFunction(() => /refused an offer of this requester/.test(document.getElementById('fact-noprovider')?.textContent || ''), null, { timeout: WAIT });
    expect(!(await p.$(offer)), 'the requester was offered again to the provider that declined it');
    await b.click('#cancel');
    await b.waitForSelector('#status[data-state="CANCELLED"]', { timeout: WAIT });
  });

  await step('an offer withdrawn when the provider goes offline puts the requester back to waiting', async () => {
    await b.click('#join'); // a new ticket: no provider has refused it
    await b.waitForSelector('#match-card[data-state="PENDING_ACCEPT"]', { timeout: WAIT });
    await p.waitForSelector(`${offers}[data-status="OFFERED"][data-requester="${requesterId}"]`, { timeout: WAIT });
    await p.click('#p-offline');
    await p.waitForSelector('#provider-card[data-online="false"]', { timeout: WAIT });
    await b.waitForSelector('#status[data-state="WAITING"]', { timeout: WAIT });
    const title = await b.textContent('#status-title');
    expect(title === 'Back in the queue', `requester after the offer was withdrawn: ${title}`);
    await b.waitForFunction(() => /no provider online/.test(document.getElementById('fact-noprovider')?.textContent || ''), null, { timeout: WAIT });
    await b.waitForFunction(() => /^0 online · 0 busy$/.test(document.querySelector('#lobby-body tr[data-queue="advice"] .lobby-providers')?.textContent || ''),
      null, { timeout: WAIT });
    await shot(b, '16-requester-back-waiting.png');
    await b.click('#cancel');
    await b.waitForSelector('#status[data-state="CANCELLED"]', { timeout: WAIT });
  });

  await step('the provider view fits a phone', async () => {
    await p.setViewportSize({ width: 390, height: 844 });
    await p.waitForTimeout(200);
    const overflow = await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow <= 0, `the provider view is ${overflow}px wider than a phone`);
    await shot(p, '17-provider-phone.png', { fullPage: true });
  });

  await step('the page fits a phone', async () => {
    await a.setViewportSize({ width: 390, height: 844 });
    await a.waitForTimeout(200);
    const { overflow, culprits } = await a.evaluate(() => ({
      overflow: document.documentElement.scrollWidth - window.innerWidth,
      culprits: [...document.querySelectorAll('body *')]
        .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5)
        .slice(0, 5).map((e) => `${e.tagName.toLowerCase()}#${e.id}.${e.className}`),
    }));
    expect(overflow <= 0, `the page is ${overflow}px wider than a phone: ${culprits.join(', ')}`);
    await shot(a, '10-phone.png', { fullPage: true });
  });

  await step('no console errors', async () => {
    // Let pending heartbeats, lobby refreshes and sim sockets settle.
    await a.waitForTimeout(500);
    expect(!problems.length, problems.join('\n'));
  });
} catch {
  exitCode = 1;
} finally {
  await context.close().catch(() => {});
  rmSync(userDataDir, { recursive: true, force: true });
}
if (problems.length && exitCode === 0) exitCode = 1;
if (problems.length) console.log(problems.join('\n'));
console.log(`browser: ${passed} passed, ${failed} failed`);
process.exit(exitCode);
