// What the journeys share: the guard that fails a test on any CSP
// violation or page error, screenshots, signing up and out, the demo
// connector, the offline model and the demo servers' own call logs and
// admin routes (the plain one, and the one in OAuth mode). Not a spec:
// Playwright runs only `*.spec.ts`.
import path from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import {
  expect,
  test,
  type APIRequestContext,
  type Browser,
  type Locator,
  type Page,
  type TestInfo,
} from '@playwright/test';

// Long, random-looking and unrelated words: passes any strength check.
export const PASSPHRASE = 'copper Lantern orbit 47 quietly Harbour';
export const DEMO_ADMIN = process.env.COUNTERSIGN_E2E_DEMO_ADMIN;
// The demo server in OAuth mode (`--oauth`): its root, http://127.0.0.1:PORT.
export const OAUTH_DEMO = process.env.COUNTERSIGN_E2E_OAUTH_DEMO;
export const DEMO_NAME = 'Countersign demo';
// The offline demo's reply, a summary of the tool result, with room for a
// slow machine (the server streams one word every 150 ms).
export const REPLY_TIMEOUT = 30_000;

export function uniqueEmail(label: string): string {
  return `e2e-${label}-${Date.now()}-${Math.floor(Math.random() * 1e6)}@example.com`;
}

/**
 * A CSP violation, an uncaught error, a panic or any error the console
 * shows in any page of a test's browser context fails the test, even if
 * the journey got through (the server's
 * CSP forbids inline scripts and styles). Call once per spec file. Returns
 * `watch`, which guards a page of another context (a second browser) too.
 */
export function guardPages(): (page: Page) => void {
  let problems: string[] = [];
  expectedErrors = [];
  const watch = (page: Page) => {
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      const text = message.text();
      // Any error the page logs fails the test (a Rust panic, a Leptos
      // warning about a disposed reactive value, a CSP violation), except
      // the browser's own line for an HTTP error answer, which journeys
      // provoke on purpose (a 409, a 410) and the page handles.
      const httpAnswer = /^Failed to load resource: the server responded with a status of \d{3}/.test(text);
      const expected = expectedErrors.some((re) => re.test(text));
      if (
        (message.type() === 'error' && !httpAnswer && !expected) ||
        /panicked|disposed|Content.Security.Policy/i.test(text)
      ) {
        problems.push(`console ${message.type()}: ${text}`);
      }
    });
  };
  test.beforeEach(({ context }) => {
    problems = [];
    expectedErrors = [];
    context.pages().forEach(watch);
    context.on('page', watch);
  });
  test.afterEach(() => {
    expect(problems, 'CSP violations or page errors').toEqual([]);
  });
  return watch;
}

/**
 * Presses one of a card's allow choices, opening "Allow…" first on a card
 * that leans safe (a destructive or flagged one, where Decline is the
 * primary button and the allow choices sit behind one control).
 */
export async function allow(card: Locator, grant: 'once' | 'turn' | 'always' = 'once') {
  await revealAllow(card);
  await card.getByTestId(`approval-allow-${grant}`).click();
}

/** Opens a leaning-safe card's "Allow…" (nothing on any other card). */
export async function revealAllow(card: Locator) {
  const menu = card.getByTestId('approval-allow-menu');
  if ((await menu.count()) > 0 && (await menu.getAttribute('aria-expanded')) !== 'true') {
    await menu.click();
  }
}

/** The console errors the running journey provokes on purpose. */
let expectedErrors: RegExp[] = [];

/**
 * Says that the running journey provokes a console error matching
 * `pattern` on purpose (a chunk it made unreachable, say): the guard
 * lets it pass. Never a panic, a disposed value or a CSP violation.
 */
export function expectConsoleError(pattern: RegExp) {
  expectedErrors.push(pattern);
}

/** Saves `e2e/artifacts/<name>.png` (the viewport), whatever the working directory. */
export async function snap(page: Page, name: string) {
  // The viewport, as a person sees it: the signed-in pages scroll inside
  // their own areas, so a "full page" picture only adds empty space below.
  // Transitions finished (the drawer sliding in), so the picture is the
  // state the test reached.
  await page.screenshot({
    path: path.join(__dirname, '..', 'artifacts', `${name}.png`),
    animations: 'disabled',
  });
}

export const WIDTHS = [1280, 390] as const;
export const SCHEMES = ['light', 'dark'] as const;

/** Runs axe on the page as it is now; fails naming each violation. */
export async function expectNoViolations(page: Page, what: string) {
  // Every default rule, and the experimental check that a control's
  // accessible name starts with its visible words (speech users say what
  // they see: "click Make admin").
  const results = await new AxeBuilder({ page })
    .options({ rules: { 'label-content-name-mismatch': { enabled: true } } })
    .analyze();
  const found = results.violations.map(
    (v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).slice(0, 5).join(', ')}`,
  );
  expect(found, `${what}: axe violations`).toEqual([]);
}

/**
 * Axe (issue 12: no violation on any page, in both colour schemes, at both
 * widths) and a screenshot `all-<name>-<width>-<scheme>` in every
 * combination, for the page as it is; back to light at 1280 px after.
 */
export async function everyWay(page: Page, name: string, settle?: () => Promise<void>) {
  for (const scheme of SCHEMES) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: width === 390 ? 844 : 800 });
      if (settle) await settle();
      await expectNoViolations(page, `${name} at ${width} px, ${scheme}`);
      await snap(page, `all-${name}-${width}-${scheme}`);
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 1280, height: 800 });
}

/** How many times the demo server (at `admin`, by default the plain one) executed `tool` (its own call log). */
export async function demoCalls(request: APIRequestContext, tool: string, admin = DEMO_ADMIN): Promise<number> {
  expect(admin, 'COUNTERSIGN_E2E_DEMO_ADMIN (or _OAUTH_DEMO) must point at the demo MCP server').toBeTruthy();
  const response = await request.get(`${admin}/admin/calls`);
  expect(response.ok(), 'GET /admin/calls').toBe(true);
  const log = (await response.json()) as { by_tool: Record<string, number> };
  return log.by_tool[tool] ?? 0;
}

/** Steers the demo server: `admin(route, data)` posts `data` (if any) as JSON to its `route`. */
export function demoAdmin(request: APIRequestContext) {
  expect(DEMO_ADMIN, 'COUNTERSIGN_E2E_DEMO_ADMIN must point at the demo MCP server').toBeTruthy();
  return (route: string, data?: unknown) => request.post(`${DEMO_ADMIN}${route}`, data === undefined ? {} : { data });
}

/**
 * Signs up a new account (an address made from `label`, with the display
 * name `name` if given) and waits for the shell. Returns the address.
 */
export async function signUp(page: Page, label: string, name?: string): Promise<string> {
  const email = uniqueEmail(label);
  await page.goto('/signup');
  await page.getByTestId('signup-email').fill(email);
  if (name !== undefined) {
    await page.getByTestId('signup-name').fill(name);
  }
  await page.getByTestId('signup-password').fill(PASSPHRASE);
  await page.getByTestId('signup-submit').click();
  await expect(page.getByTestId('shell')).toBeVisible();
  return email;
}

/** Signs out from the sidebar and waits for the sign-in page. */
export async function signOut(page: Page) {
  await page.getByTestId('signout').click();
  await expect(page).toHaveURL(/\/signin$/);
  await expect(page.getByTestId('signin-submit')).toBeVisible();
}

/** The demo connector's row in Settings → Connectors (Settings must be open). */
export function demoRow(page: Page): Locator {
  return page
    .getByTestId('connectors-section')
    .locator(`[data-testid="connector-row"][data-connector-name="${DEMO_NAME}"]`);
}

/**
 * Clicks the sidebar's `testId` (`nav-settings`, `nav-activity`,
 * `new-chat`…); on a narrow screen, where the sidebar is a drawer, opens
 * it with "Menu" first.
 */
export async function navTo(page: Page, testId: string) {
  const menu = page.getByTestId('menu-button');
  if (await menu.isVisible()) {
    if ((await menu.getAttribute('aria-expanded')) !== 'true') {
      await menu.click();
    }
    await expect(page.getByTestId('sidebar')).toBeVisible();
  }
  await page.getByTestId(testId).click();
}

/**
 * Fails if the page, or anything in its main area (a table in a scroll
 * box, say), scrolls sideways. Names what does.
 */
export async function expectNoSidewaysScroll(page: Page, what: string) {
  const scrolling = await page.evaluate(() => {
    const found: string[] = [];
    const doc = document.documentElement;
    if (doc.scrollWidth > doc.clientWidth + 1) {
      found.push(`the page (${doc.scrollWidth - doc.clientWidth} px)`);
    }
    for (const el of Array.from(document.querySelectorAll('main, main *'))) {
      const overflowX = getComputedStyle(el).overflowX;
      if ((overflowX === 'auto' || overflowX === 'scroll') && el.scrollWidth > el.clientWidth + 1) {
        const name = el.getAttribute('data-testid') ?? `${el.tagName.toLowerCase()}.${el.className}`;
        found.push(`${name} (${el.scrollWidth - el.clientWidth} px)`);
      }
    }
    return found;
  });
  expect(scrolling, `${what}: what scrolls sideways`).toEqual([]);
}

/** Settings → Connectors: adds the demo server in one click and keeps `keep`. Returns its row. */
export async function addDemoConnector(page: Page, keep: string[]): Promise<Locator> {
  await navTo(page, 'nav-settings');
  await expect(page).toHaveURL(/\/settings$/);
  await page.getByTestId('connectors-section').getByTestId('available-add').first().click();
  const row = demoRow(page);
  await expect(row.getByTestId('connector-status')).toHaveAttribute('data-status', 'ok');
  // Added here, the review opens by itself (issue 45 item 8).
  await openReview(row);
  for (const name of keep) {
    await row.locator(`[data-testid="tool-row"][data-tool-name="${name}"]`).getByTestId('tool-keep').check();
  }
  await row.getByTestId('review-save').click();
  // The saved review, as the server counts it (the notice after saving can
  // be replaced by the refreshed row before it is seen).
  await expect(row.getByTestId('connector-tool-counts')).toContainText(`${keep.length} kept`);
  return row;
}

/** Opens a connector row's tool review, unless it is open already. */
export async function openReview(row: Locator) {
  const toggle = row.getByTestId('connector-review');
  if ((await toggle.getAttribute('aria-expanded')) !== 'true') {
    await toggle.click();
  }
  await expect(toggle).toHaveAttribute('aria-expanded', 'true');
}

/** Clicks "New chat" (offline demo model) and waits for the empty chat. */
export async function newChat(page: Page) {
  await navTo(page, 'new-chat');
  await expect(page).toHaveURL(/\/chats\/[0-9a-f-]{36}$/);
  await expect(page.getByTestId('composer-input')).toBeVisible();
  await expect(page.getByTestId('offline-badge')).toBeVisible();
}

/** Sends `text` to the offline demo model. */
export async function say(page: Page, text: string) {
  await page.getByTestId('composer-input').fill(text);
  await page.getByTestId('composer-send').click();
}

/** Asks the offline demo model to call `tool` with `args` (its `use TOOL with {json}`). */
export async function ask(page: Page, tool: string, args: object) {
  await say(page, `use ${tool} with ${JSON.stringify(args)}`);
}

/** Waits until the turn is over (Stop gone, the answer no longer streaming). */
export async function turnOver(page: Page) {
  await expect(page.getByTestId('stop-turn')).toHaveCount(0, { timeout: REPLY_TIMEOUT });
  await expect(page.getByTestId('message-assistant').last()).not.toHaveAttribute('data-streaming', {
    timeout: REPLY_TIMEOUT,
  });
}

/** The e2e instance's administrator (`countersign user create --admin`). */
export const ADMIN_EMAIL = process.env.COUNTERSIGN_E2E_ADMIN_EMAIL ?? '';
const ONE_TIME = process.env.COUNTERSIGN_E2E_ADMIN_PASSWORD ?? '';

/**
 * Signs the administrator in, in a browser of their own. The first time in
 * a run, with the one-time password: the app asks for a new one
 * (PASSPHRASE) before anything else.
 */
export async function adminBrowser(browser: Browser, testInfo: TestInfo, watch: (page: Page) => void) {
  expect(ADMIN_EMAIL, 'COUNTERSIGN_E2E_ADMIN_EMAIL (cargo xtask sets it)').not.toBe('');
  const context = await browser.newContext({ baseURL: testInfo.project.use.baseURL });
  const page = await context.newPage();
  watch(page);
  const signIn = async (password: string) => {
    await page.goto('/signin');
    await page.getByTestId('signin-email').fill(ADMIN_EMAIL);
    await page.getByTestId('signin-password').fill(password);
    await page.getByTestId('signin-submit').click();
  };
  await signIn(ONE_TIME);
  const outcome = await Promise.race([
    page.getByTestId('new-password-required').waitFor().then(() => 'reset' as const),
    page.getByTestId('signin-error').waitFor().then(() => 'refused' as const),
  ]);
  if (outcome === 'reset') {
    await expect(page.getByRole('heading', { name: 'Choose a new password' })).toBeVisible();
    await snap(page, 'admin-new-password');
    await page.getByTestId('password-current').fill(ONE_TIME);
    await page.getByTestId('password-new').fill(PASSPHRASE);
    await page.getByTestId('password-confirm').fill(PASSPHRASE);
    await page.getByTestId('password-submit').click();
  } else {
    // An earlier test of this run chose it already.
    await signIn(PASSPHRASE);
  }
  await expect(page.getByTestId('shell')).toBeVisible();
  return { context, page };
}

