// The demo page in a real browser: Debian's Chromium driven by
// playwright-core. Run by browser_test.go (go test ./tests/browser/), which
// starts the server; by hand:
//
//   go run ./cmd/matchgate serve &
//   cd tests/browser && npm ci && MATCHGATE_URL=http://127.0.0.1:8080 node demo.mjs
//
// Environment: MATCHGATE_URL (required), CHROMIUM (default /usr/bin/chromium),
// ARTIFACTS (screenshot folder, default ../../test-artifacts/browser).
//
// It checks: two pages join the same queue and both show the match; a page
// that reloads while waiting still receives its match; the lobby shows a
// queue's depth; simulated players added from the page fill a 4-player
// match; no console errors on any page. Screenshots go to ARTIFACTS.

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

if (!BASE) {
  console.error('MATCHGATE_URL is not set (e.g. http://127.0.0.1:8080)');
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
    await signIn(b, 'Alan', 1510);
    expect((await a.textContent('#me-name')) === 'Ada', 'A shows its name');
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
    await shot(a, '07-phone.png', { fullPage: true });
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
