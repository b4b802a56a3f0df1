// Journeys through the input card (DESIGN §6a): an approved call's server
// asks the user for input while it runs, and the chat shows a card under
// the call with the server's message, a countdown and either a form or a
// URL; nothing goes back to the server until the user answers.
//
// - Form mode: the demo's file_note asks which matter to file under. The
//   required field is checked before anything is sent; filled and
//   accepted, the card folds to "You answered", the tool's result says
//   what the server did, and a reload keeps it folded.
// - URL mode: the demo's confirm_identity asks the user to open a page on
//   the demo server. The whole URL is shown with its host in bold, nothing
//   opens by itself, and Decline folds it to "You declined".
// - A reload while the form waits brings the same card back, and it still
//   answers (with the keyboard: Enter submits).
// - Two tabs: cancelling in one folds the card in the other.
//
// Needs, like approvals.spec.ts, the server started with the demo MCP
// server as an available connector (`cargo xtask e2e` does it).
import { expect, test, type Locator, type Page } from '@playwright/test';
import {
  DEMO_NAME,
  REPLY_TIMEOUT,
  addDemoConnector,
  ask,
  everyWay,
  guardPages,
  newChat,
  signUp,
  snap,
  turnOver, allow } from './support';

const TOOLS = ['file_note', 'confirm_identity'];

test.setTimeout(120_000);

guardPages();

/** Presses Allow once on the (last) approval card for `tool`. */
async function allowOnce(page: Page, tool: string) {
  const card = page.getByTestId('approval-card').last();
  await expect(card).toHaveAttribute('data-state', 'pending', { timeout: REPLY_TIMEOUT });
  await expect(card.getByTestId('approval-title')).toHaveText(`${DEMO_NAME}: ${tool} wants to run`);
  await allow(card);
}

/** The last input card on the page, once it waits for an answer. */
async function pendingInput(page: Page, tool: string, mode: 'form' | 'url'): Promise<Locator> {
  const card = page.getByTestId('input-card').last();
  await expect(card).toHaveAttribute('data-state', 'pending', { timeout: REPLY_TIMEOUT });
  await expect(card).toHaveAttribute('data-mode', mode);
  await expect(card.getByTestId('input-title')).toHaveText(`${DEMO_NAME} asks for input for ${tool}`);
  await expect(card.getByTestId('input-countdown')).toHaveText(/^Answer within \d+:\d\d$/);
  // A labelled group, named for who asks.
  await expect(page.getByRole('group', { name: `${DEMO_NAME} asks for input for ${tool}` })).toBeVisible();
  return card;
}

/**
 * Screenshots of the chat with `part` in view, at 1280 px and 390 px wide
 * (tall windows, so the whole card fits in the transcript), with no
 * sideways scroll at 390.
 */
async function snapBothWidths(page: Page, part: Locator, name: string) {
  await page.setViewportSize({ width: 1280, height: 1000 });
  await part.scrollIntoViewIfNeeded();
  await snap(page, name);
  await page.setViewportSize({ width: 390, height: 1800 });
  await part.scrollIntoViewIfNeeded();
  const overflow = await part.evaluate((el) => {
    const transcript = el.closest('[data-testid="transcript"]') as HTMLElement;
    return {
      card: el.scrollWidth - el.clientWidth,
      transcript: transcript.scrollWidth - transcript.clientWidth,
      page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
    };
  });
  expect(overflow, `${name}: nothing wider than the screen at 390 px`).toEqual({ card: 0, transcript: 0, page: 0 });
  await snap(page, `${name}-390`);
  await page.setViewportSize({ width: 1280, height: 720 });
}

/** Counts this page's answers to input requests (POSTs to /api/mcp-input-requests/{id}). */
function countAnswers(page: Page): () => number {
  let posts = 0;
  page.on('request', (request) => {
    if (request.method() === 'POST' && /\/api\/mcp-input-requests\/[^/]+$/.test(request.url())) {
      posts += 1;
    }
  });
  return () => posts;
}

test('a form that asks for a secret is flagged, naming the field, and stays a plain text field', async ({ page }) => {
  await signUp(page, 'elicit-secret', 'Sue Cret');
  await addDemoConnector(page, TOOLS);
  await newChat(page);

  // The demo asks for the portal's API key when the note's title names a
  // portal (issue 44: the server decides which fields ask for secrets).
  await ask(page, 'file_note', { title: 'Docketing portal filing' });
  await allowOnce(page, 'file_note');
  const card = await pendingInput(page, 'file_note', 'form');
  const warning = card.getByTestId('input-secret-warning');
  await expect(warning).toHaveText(
    `This form asks for a secret (Docketing portal API key). Countersign never asks for passwords in a form; only answer if you trust ${DEMO_NAME}.`,
  );
  await expect(warning).toHaveAttribute('role', 'note');
  const key = card.getByLabel('Docketing portal API key');
  await expect(key).toHaveAttribute('type', 'text');
  await expect(card.locator('input[type="password"]')).toHaveCount(0);
  await snapBothWidths(page, warning, 'elicitation-secret-warning');
  await everyWay(page, 'chat-input-secret', () => warning.scrollIntoViewIfNeeded());

  await card.getByTestId('input-cancel').click();
  await expect(card).toHaveAttribute('data-state', 'cancelled', { timeout: REPLY_TIMEOUT });
  await turnOver(page);
});

test('a form card: the required field is checked before anything is sent, Accept files the note, and a reload keeps the card folded', async ({
  page,
}) => {
  await signUp(page, 'elicit-form', 'Eli Citation');
  await addDemoConnector(page, TOOLS);
  await newChat(page);
  const answers = countAnswers(page);

  await ask(page, 'file_note', { title: 'Engagement letter' });
  await allowOnce(page, 'file_note');
  const card = await pendingInput(page, 'file_note', 'form');
  await expect(card.getByTestId('input-status')).toHaveText('Waiting for your answer');
  await expect(card.getByTestId('input-message')).toHaveText('Which matter should "Engagement letter" be filed under?');

  // The fields, as the schema describes them: a required text with its
  // help, a choice preselected at its default, and a checkbox.
  const matter = card.getByLabel('Matter number');
  await expect(matter).toHaveAttribute('type', 'text');
  await expect(matter).toHaveAttribute('aria-required', 'true');
  await expect(matter).toHaveValue('');
  await expect(card.locator('label', { hasText: 'Matter number' })).toHaveText('Matter number (required)');
  await expect(matter).toHaveAccessibleDescription('As on the file, e.g. 2024-0117');
  await expect(card.getByRole('group', { name: 'Confidentiality' })).toBeVisible();
  await expect(card.getByRole('radio', { name: 'Privileged' })).toBeChecked();
  await expect(card.getByRole('radio', { name: 'Public' })).not.toBeChecked();
  await expect(card.getByRole('radio', { name: 'Internal' })).not.toBeChecked();
  const notify = card.getByRole('checkbox', { name: 'Tell the matter team' });
  await expect(notify).not.toBeChecked();
  await expect(card.locator('input[type="password"]')).toHaveCount(0);
  await expect(card.getByTestId('input-secret-warning')).toHaveCount(0);
  await expect(card.getByTestId('input-accept')).toHaveAccessibleDescription(`Send these answers to ${DEMO_NAME}`);
  // The turn waits for the user, and the composer says so.
  await expect(page.getByTestId('composer-hint')).toHaveText(
    `${DEMO_NAME} is waiting for your answer above. The reply goes on once you answer.`,
  );
  await snapBothWidths(page, card, 'elicitation-form-pending');
  // Axe: no violation, light and dark, wide and narrow (issue 12).
  await everyWay(page, 'chat-input-form', () => card.scrollIntoViewIfNeeded());

  // Accept with the required field empty: a clear error beside it, the
  // keyboard on it, and nothing sent.
  await card.getByTestId('input-accept').click();
  const error = card.getByTestId('input-field-error');
  await expect(error).toHaveText('Matter number is required.');
  await expect(matter).toHaveAttribute('aria-invalid', 'true');
  await expect(matter).toHaveAccessibleDescription('As on the file, e.g. 2024-0117 Matter number is required.');
  await expect(matter).toBeFocused();
  await expect(card).toHaveAttribute('data-state', 'pending');
  expect(answers()).toBe(0);
  await snapBothWidths(page, card, 'elicitation-form-error');

  // Filled in, the error goes; ticked and accepted, the card folds.
  await matter.fill('2024-0117');
  await expect(error).toHaveCount(0);
  await notify.check();
  await card.getByTestId('input-accept').click();
  await expect(card).toHaveAttribute('data-state', 'accepted', { timeout: REPLY_TIMEOUT });
  await expect(card.getByTestId('input-status')).toHaveText('You answered');
  await expect(card.getByTestId('input-title')).toHaveText(`${DEMO_NAME} asked for input for file_note`);
  await expect(card.getByTestId('input-accept')).toBeHidden();
  await expect(card.getByTestId('input-countdown')).toHaveCount(0);
  expect(answers()).toBe(1);

  // The call went on with the answer: the tool's result says what it did.
  const answer = page.getByTestId('message-assistant');
  await expect(answer).toContainText('Filed "Engagement letter" under matter 2024-0117 as privileged; the team was told.', {
    timeout: REPLY_TIMEOUT,
  });
  await turnOver(page);
  await expect(page.getByTestId('approval-card').getByTestId('approval-status')).toContainText('Allowed once — ran successfully');
  await snapBothWidths(page, card, 'elicitation-form-answered');

  // A reload shows it as it ended: folded, nothing to answer.
  await page.reload();
  const reloaded = page.getByTestId('input-card');
  await expect(reloaded).toHaveCount(1);
  await expect(reloaded).toHaveAttribute('data-state', 'accepted');
  await expect(reloaded.getByTestId('input-status')).toHaveText('You answered');
  await expect(reloaded.getByTestId('input-accept')).toBeHidden();
  await expect(reloaded.getByLabel('Matter number')).toBeHidden();
  expect(answers()).toBe(1);
});

test('a URL card shows the whole address with its host in bold, opens nothing by itself, and Decline says so', async ({
  page,
  context,
}) => {
  const opened: string[] = [];
  context.on('page', (other) => opened.push(other.url()));
  await signUp(page, 'elicit-url', 'Eli Citation');
  await addDemoConnector(page, TOOLS);
  await newChat(page);

  await ask(page, 'confirm_identity', { document: 'Privileged memo' });
  await allowOnce(page, 'confirm_identity');
  const card = await pendingInput(page, 'confirm_identity', 'url');
  await expect(card.getByTestId('input-message')).toHaveText('Confirm it is you before "Privileged memo" is shared.');

  // The whole URL, its host apart and in bold, and the button named for it.
  const url = card.getByTestId('input-url');
  await expect(url).toHaveText(/^http:\/\/127\.0\.0\.1:\d+\/confirm-identity\?request=[0-9a-f]+$/);
  const host = card.getByTestId('input-url-host');
  await expect(host).toHaveText(/^127\.0\.0\.1:\d+$/);
  expect(await host.evaluate((el) => el.tagName)).toBe('STRONG');
  expect(Number(await host.evaluate((el) => getComputedStyle(el).fontWeight))).toBeGreaterThanOrEqual(700);
  const hostText = await host.innerText();
  await expect(url).toContainText(`http://${hostText}/confirm-identity?request=`);
  await expect(card.getByTestId('input-open')).toHaveText(`Open ${hostText}`);
  // Plain http is flagged; it is not punycode.
  await expect(card.locator('[data-testid="input-url-warning"][data-warning="not-https"]')).toBeVisible();
  await expect(card.locator('[data-warning="punycode"]')).toHaveCount(0);
  // Nothing opened, and no link on the page a browser could follow or
  // prefetch: the address is text until "Open" is pressed.
  await expect(page.locator('a[href*="confirm-identity"]')).toHaveCount(0);
  expect(opened).toEqual([]);
  expect(context.pages()).toHaveLength(1);
  await snapBothWidths(page, card, 'elicitation-url-pending');
  // (axe opens a blank page of its own for each check: not the app's.)
  const beforeAxe = opened.length;
  await everyWay(page, 'chat-input-url', () => card.scrollIntoViewIfNeeded());
  opened.splice(beforeAxe);

  await card.getByTestId('input-decline').click();
  await expect(card).toHaveAttribute('data-state', 'declined', { timeout: REPLY_TIMEOUT });
  await expect(card.getByTestId('input-status')).toHaveText('You declined');
  await expect(card.getByTestId('input-url')).toBeHidden();
  await expect(page.getByTestId('message-assistant')).toContainText(
    'Not shared: the user declined to confirm their identity.',
    { timeout: REPLY_TIMEOUT },
  );
  await turnOver(page);
  expect(opened).toEqual([]);
  expect(context.pages()).toHaveLength(1);
  await snapBothWidths(page, card, 'elicitation-url-declined');

  await page.reload();
  await expect(page.getByTestId('input-card')).toHaveAttribute('data-state', 'declined');
  await expect(page.getByTestId('input-status')).toHaveText('You declined');
  expect(opened).toEqual([]);
});

test('a reload while the form waits brings the same card back, and answering it with the keyboard still works', async ({
  page,
}) => {
  await signUp(page, 'elicit-reload', 'Eli Citation');
  await addDemoConnector(page, TOOLS);
  await newChat(page);

  await ask(page, 'file_note', { title: 'Board minutes' });
  await allowOnce(page, 'file_note');
  const card = await pendingInput(page, 'file_note', 'form');
  const id = await card.getAttribute('data-input-id');
  expect(id).toBeTruthy();

  await page.reload();
  const again = await pendingInput(page, 'file_note', 'form');
  await expect(again).toHaveAttribute('data-input-id', id!);
  await expect(again.getByTestId('input-message')).toHaveText('Which matter should "Board minutes" be filed under?');
  await expect(again.getByRole('radio', { name: 'Privileged' })).toBeChecked();
  await expect(page.getByTestId('stop-turn')).toBeVisible();

  // Keyboard only: pick "Internal" with the arrow keys, type the matter,
  // Enter submits.
  await again.getByRole('radio', { name: 'Privileged' }).focus();
  await page.keyboard.press('ArrowLeft');
  await expect(again.getByRole('radio', { name: 'Internal' })).toBeChecked();
  const matter = again.getByLabel('Matter number');
  await matter.focus();
  await page.keyboard.type('2024-0118');
  await page.keyboard.press('Enter');
  await expect(again).toHaveAttribute('data-state', 'accepted', { timeout: REPLY_TIMEOUT });
  await expect(again.getByTestId('input-status')).toHaveText('You answered');
  await expect(again.getByTestId('input-status')).toBeFocused();
  await expect(page.getByTestId('message-assistant')).toContainText(
    'Filed "Board minutes" under matter 2024-0118 as internal; nobody was told.',
    { timeout: REPLY_TIMEOUT },
  );
  await turnOver(page);
});

test('cancelling in one tab folds the card in the other', async ({ page, context }) => {
  await signUp(page, 'elicit-tabs', 'Eli Citation');
  await addDemoConnector(page, TOOLS);
  await newChat(page);

  await ask(page, 'file_note', { title: 'Side letter' });
  await allowOnce(page, 'file_note');
  const first = await pendingInput(page, 'file_note', 'form');
  const id = await first.getAttribute('data-input-id');

  const other = await context.newPage();
  await other.goto(page.url());
  const second = await pendingInput(other, 'file_note', 'form');
  await expect(second).toHaveAttribute('data-input-id', id!);

  await second.getByTestId('input-cancel').click();
  for (const card of [second, first]) {
    await expect(card).toHaveAttribute('data-state', 'cancelled', { timeout: REPLY_TIMEOUT });
    await expect(card.getByTestId('input-status')).toHaveText('Cancelled');
    await expect(card.getByTestId('input-accept')).toBeHidden();
  }
  await expect(page.getByTestId('message-assistant')).toContainText('Not filed: the user cancelled.', {
    timeout: REPLY_TIMEOUT,
  });
  await turnOver(page);
  await turnOver(other);
  await other.close();
});
