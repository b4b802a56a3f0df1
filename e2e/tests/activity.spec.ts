// Activity as an audit trail (issue 45; DESIGN §9): one person's calls —
// an echo that names an e-mail address (allowed), a search (allowed) whose
// result the next echo copies (a flagged flow, declined), and an echo left
// waiting — then the Activity page: the waiting call, each call's full
// time with seconds and zone, where it sends data, the flagged flow, the
// filters (by keyboard too) and the CSV and JSON exports of what they
// show. Axe and screenshots at 1280 and 390 px, light and dark: a table
// that fits at 1280 px, a card per call at 390 px.
import { expect, test, type Locator, type Page } from '@playwright/test';
import {
  DEMO_NAME,
  REPLY_TIMEOUT,
  SCHEMES,
  WIDTHS,
  addDemoConnector,
  expectNoSidewaysScroll,
  expectNoViolations,
  guardPages,
  navTo,
  newChat,
  say,
  signUp,
  snap,
  allow,
} from './support';

test.setTimeout(180_000);

guardPages();

/** The `count`-th approval card (1-based), once it waits for a decision. */
async function waitingCard(page: Page, tool: string, count: number): Promise<Locator> {
  const cards = page.getByTestId('approval-card');
  await expect(cards).toHaveCount(count, { timeout: REPLY_TIMEOUT });
  const card = cards.nth(count - 1);
  await expect(card.getByTestId('approval-title')).toHaveText(`${DEMO_NAME}: ${tool} wants to run`);
  await expect(card).toHaveAttribute('data-state', 'pending');
  return card;
}

test('the activity page filters, shows destinations, flagged flows and waiting calls, and exports', async ({
  page,
}) => {
  await signUp(page, 'trail', 'Ada Audit');
  await addDemoConnector(page, ['echo', 'search_notes']);
  await newChat(page);

  // An echo that sends to an address: allowed once.
  await say(page, 'use echo with {"text":"Please mail partner@firm.example the privileged lease"}');
  const mail = await waitingCard(page, 'echo', 1);
  await allow(mail);
  await expect(mail.getByTestId('approval-status')).toContainText('ran successfully', { timeout: REPLY_TIMEOUT });

  // A search, then an echo of its result: the flagged card is declined.
  await say(
    page,
    'use search_notes with {"query":"Harbour"} then use echo with {"text":"Forwarding: {{result}}"}',
  );
  const search = await waitingCard(page, 'search_notes', 2);
  await allow(search);
  const copy = await waitingCard(page, 'echo', 3);
  await expect(copy.getByTestId('approval-flows')).toBeVisible();
  await copy.getByTestId('approval-decline').click();
  await expect(page.getByTestId('stop-turn')).toHaveCount(0, { timeout: REPLY_TIMEOUT });

  // One more echo, left waiting.
  await say(page, 'use echo with {"text":"still deciding"}');
  await waitingCard(page, 'echo', 4);

  await navTo(page, 'nav-activity');
  await expect(page).toHaveURL(/\/activity$/);
  const rows = page.getByTestId('activity-row');
  // The declined call's entry is written as its card resolves: refresh
  // until all three calls are there.
  await expect(async () => {
    await page.getByTestId('activity-refresh').click();
    await expect(rows).toHaveCount(3, { timeout: 1_000 });
    await expect(rows.first()).toHaveAttribute('data-decision', 'denied', { timeout: 1_000 });
  }).toPass({ timeout: 15_000 });

  // The waiting call.
  const waiting = page.getByTestId('activity-waiting-call');
  await expect(waiting).toHaveCount(1);
  await expect(waiting).toContainText(`${DEMO_NAME}: echo`);
  await expect(waiting.getByTestId('activity-waiting-link')).toHaveAttribute('href', /\/chats\//);

  // Full times: seconds and the zone.
  await expect(rows.first().getByTestId('activity-time')).toHaveText(
    /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC([+-]\d\d:\d\d)?$/,
  );
  // The flagged flow, named; the address the first echo sends to.
  const flagged = page.locator('[data-testid="activity-row"][data-flagged="true"]');
  await expect(flagged).toHaveCount(1);
  await expect(flagged.getByTestId('activity-flow')).toContainText(
    `This sends text from ${DEMO_NAME}: search_notes to ${DEMO_NAME}: echo`,
  );
  const mailRow = rows.nth(2);
  await expect(mailRow).toHaveAttribute('data-decision', 'approved');
  await expect(mailRow.getByTestId('activity-destination')).toHaveText('partner@firm.example');
  await expect(page.getByTestId('activity-table')).not.toContainText('privileged lease');

  // Filters: a decision, by the mouse.
  await page.getByLabel('Decision', { exact: true }).selectOption('denied');
  await page.getByTestId('activity-apply').click();
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toHaveAttribute('data-flagged', 'true');
  // The exports carry what is applied.
  const csvHref = await page.getByTestId('activity-export-csv').getAttribute('href');
  expect(csvHref).toBe('/api/activity/export?format=csv&decision=denied');
  const csv = await page.request.get(csvHref!);
  expect(csv.status()).toBe(200);
  expect(csv.headers()['x-row-cap']).toBe('10000');
  const csvLines = (await csv.text()).trim().split('\n');
  expect(csvLines[0]).toContain('at most 10000 rows');
  expect(csvLines.at(-1)).toBe('# 1 row; complete');
  const jsonHref = await page.getByTestId('activity-export-json').getAttribute('href');
  const json = await (await page.request.get(jsonHref!)).json();
  expect(json.row_cap).toBe(10000);
  expect(json.truncated).toBe(false);
  expect(json.rows).toHaveLength(1);
  expect(json.rows[0].flagged).toBe(true);

  // Then by the keyboard: clear, type a tool, Enter submits the form.
  await page.getByTestId('activity-clear').focus();
  await page.keyboard.press('Enter');
  await expect(rows).toHaveCount(3);
  await page.getByLabel('Tool', { exact: true }).focus();
  await page.keyboard.type('search_notes');
  await page.keyboard.press('Enter');
  await expect(rows).toHaveCount(1);
  await expect(rows.first().getByTestId('activity-tool')).toHaveText('search_notes');
  await page.getByLabel('Flagged flow', { exact: true }).selectOption('flagged');
  await page.getByTestId('activity-apply').click();
  await expect(page.getByTestId('activity-empty')).toBeVisible();
  await page.getByTestId('activity-clear').click();
  await expect(rows).toHaveCount(3);

  // Every way: axe, nothing sideways, a table at 1280 px and a card per
  // call at 390 px.
  for (const scheme of SCHEMES) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: width === 390 ? 844 : 800 });
      await expect(rows).toHaveCount(3);
      await expectNoSidewaysScroll(page, `Activity at ${width} px, ${scheme}`);
      const display = await rows.first().evaluate((row) => getComputedStyle(row).display);
      expect(display, `a row at ${width} px`).toBe(width === 390 ? 'block' : 'table-row');
      await expectNoViolations(page, `Activity at ${width} px, ${scheme}`);
      await snap(page, `activity-trail-${width}-${scheme}`);
      // The calls themselves: a table at 1280 px, cards at 390 px.
      await page.getByTestId('activity-count').evaluate((el) => el.scrollIntoView({ block: 'start' }));
      await snap(page, `activity-trail-calls-${width}-${scheme}`);
      await page.getByRole('heading', { name: 'Activity', exact: true }).scrollIntoViewIfNeeded();
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 1280, height: 800 });
});
