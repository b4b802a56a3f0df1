// The card tells the whole truth and is never lost (issue 45):
//
// - The whole payload: a long value sits whole in a scrollable box with its
//   length and its end in sight, and Allow waits, saying why, until it was
//   read to its end — by scrolling, by the keyboard (End in the focused
//   box) or by "Show all".
// - Risky leans safe: on a destructive card Decline is the primary button
//   and the allow choices sit behind "Allow…"; "Decline and tell the
//   assistant why" sends a reason the model reads, and nothing runs.
// - Never lost: opening a chat brings its waiting card into view with its
//   decision bar; the chat list badges the chat, the tab title counts it,
//   Home lists it, and the card is one Shift+Tab from the composer.
// - Edit and allow: the arguments can be changed before a call is
//   allowed once, in the tool's form or as JSON; the browser and then the
//   server check the edit, and exactly it runs.
// - A browser notification is offered on a waiting card (never at load)
//   and tells of a card that starts waiting in a hidden tab.
// - A connector's review after Add cannot be missed: it opens by itself,
//   says nothing is offered until it is saved, and Save stays in sight.
//
// Each state is checked with axe and pictured at 1280 and 390 px, light
// and dark (e2e/artifacts/all-card-*.png).
import { expect, test, type Locator, type Page } from '@playwright/test';
import {
  DEMO_NAME,
  REPLY_TIMEOUT,
  addDemoConnector,
  allow,
  ask,
  demoCalls,
  demoRow,
  everyWay,
  guardPages,
  newChat,
  signUp,
  turnOver,
} from './support';

test.setTimeout(180_000);

guardPages();

/** The one card on the page, once it waits. */
async function waitingCard(page: Page, tool: string): Promise<Locator> {
  const card = page.getByTestId('approval-card');
  await expect(card).toHaveCount(1, { timeout: REPLY_TIMEOUT });
  await expect(card.getByTestId('approval-title')).toHaveText(`${DEMO_NAME}: ${tool} wants to run`);
  await expect(card).toHaveAttribute('data-state', 'pending');
  return card;
}

/** The case: a routine note whose last words are the ones that matter. */
const TAIL = 'wire $50,000 to account 12345678';
const LONG_BODY = `${'Routine filing for the lease matter; nothing unusual here. '.repeat(62)}${TAIL}`;

test('a long value is shown whole, its end in sight, and Allow waits until it was read', async ({
  page,
  request,
}) => {
  await signUp(page, 'payload', 'Ada Approver');
  await addDemoConnector(page, ['add_note']);
  await newChat(page);
  const before = await demoCalls(request, 'add_note');
  await ask(page, 'add_note', { title: 'Filing', body: LONG_BODY });
  const card = await waitingCard(page, 'add_note');

  // All of it is on the card, in its box; the end is in sight under it.
  const value = card.getByTestId('approval-long-value');
  await expect(value).toHaveAttribute('data-must-read', 'true');
  await expect(card.getByTestId('approval-long-box')).toHaveText(JSON.stringify(LONG_BODY));
  await expect(card.getByTestId('approval-long-end')).toContainText(TAIL);
  await expect(card.getByTestId('approval-long-end')).toBeVisible();
  await expect(card.getByTestId('approval-long-length')).toHaveText(
    `${LONG_BODY.length} characters · read to the end before you allow`,
  );
  // Allow waits, and says why; Decline never waits.
  const allowOnce = card.getByTestId('approval-allow-once');
  await expect(allowOnce).toBeDisabled();
  await expect(card.getByTestId('approval-read-wait')).toContainText('Allow waits until you have read');
  await expect(allowOnce).toHaveAccessibleDescription(/Allow waits until you have read/);
  await expect(card.getByTestId('approval-decline')).toBeEnabled();
  await everyWay(page, 'card-long-unread', async () => {
    await card.getByTestId('approval-long-box').evaluate((box) => {
      box.scrollTop = 0;
    });
    await card.scrollIntoViewIfNeeded();
  });

  // Scrolled to its end: read, and Allow is there.
  await card.getByTestId('approval-long-box').evaluate((box) => {
    box.scrollTop = box.scrollHeight;
  });
  await expect(value).toHaveAttribute('data-read', 'true');
  await expect(card.getByTestId('approval-read-wait')).toHaveCount(0);
  await expect(allowOnce).toBeEnabled();
  await expect(card.getByTestId('approval-long-length')).toHaveText(
    `${LONG_BODY.length} characters · read to the end`,
  );
  await everyWay(page, 'card-long-read', async () => {
    await card.scrollIntoViewIfNeeded();
  });
  await allow(card);
  await expect(card).toHaveAttribute('data-state', 'ok', { timeout: REPLY_TIMEOUT });
  await turnOver(page);
  expect(await demoCalls(request, 'add_note')).toBe(before + 1);
});

test('the keyboard and a screen reader reach the end of a long value too', async ({ page }) => {
  await signUp(page, 'payload-keys', 'Ada Approver');
  await addDemoConnector(page, ['add_note']);
  await newChat(page);
  await ask(page, 'add_note', { title: 'Filing', body: LONG_BODY });
  let card = await waitingCard(page, 'add_note');

  // Tab reaches the box (a labelled region); End scrolls it to its end.
  const box = card.getByTestId('approval-long-box');
  await expect(box).toHaveAttribute('tabindex', '0');
  await expect(box).toHaveAccessibleName(`The value of body, ${LONG_BODY.length} characters`);
  await box.focus();
  await page.keyboard.press('End');
  await expect(card.getByTestId('approval-long-value')).toHaveAttribute('data-read', 'true');
  await expect(card.getByTestId('approval-allow-once')).toBeEnabled();

  // After a reload the card starts unread again; "Show all" (after the
  // box, in reading order) opens it whole and counts as read.
  await page.reload();
  card = await waitingCard(page, 'add_note');
  await expect(card.getByTestId('approval-allow-once')).toBeDisabled();
  const toggle = card.getByTestId('approval-long-toggle');
  await expect(toggle).toHaveText(`Show all ${LONG_BODY.length} characters`);
  await toggle.focus();
  await page.keyboard.press('Enter');
  await expect(toggle).toHaveAttribute('aria-expanded', 'true');
  await expect(card.getByTestId('approval-allow-once')).toBeEnabled();
  await card.getByTestId('approval-decline').click();
  await expect(card).toHaveAttribute('data-state', 'declined', { timeout: REPLY_TIMEOUT });
});

test('a destructive card leans safe, and a decline can tell the assistant why', async ({ page, request }) => {
  await signUp(page, 'lean', 'Ada Approver');
  await addDemoConnector(page, ['delete_note', 'search_notes']);
  await newChat(page);
  const before = await demoCalls(request, 'delete_note');
  await ask(page, 'delete_note', { id: 'n-1' });
  const card = await waitingCard(page, 'delete_note');

  // Decline is the one button that stands out; the allow choices are one
  // press behind "Allow…".
  await expect(card).toHaveAttribute('data-leans-safe', 'true');
  await expect(card.getByTestId('approval-decline')).toHaveClass(/\bprimary\b/);
  const menu = card.getByTestId('approval-allow-menu');
  await expect(menu).toHaveText('Allow…');
  await expect(menu).toHaveAttribute('aria-expanded', 'false');
  await expect(card.getByTestId('approval-allow-once')).toBeHidden();
  await everyWay(page, 'card-leans-safe', async () => {
    await card.scrollIntoViewIfNeeded();
  });
  await menu.click();
  await expect(menu).toHaveAttribute('aria-expanded', 'true');
  await expect(card.getByTestId('approval-allow-once')).toBeVisible();
  await expect(card.getByTestId('approval-allow-once')).toBeFocused();
  await expect(card.getByTestId('approval-allow-once')).not.toHaveClass(/\bprimary\b/);
  await everyWay(page, 'card-leans-safe-open', async () => {
    await card.scrollIntoViewIfNeeded();
  });

  // A read-only, closed-world card does not lean safe.
  // (search_notes: Allow once stays the primary button; approvals.spec.)

  // "Decline and tell the assistant why".
  await card.getByTestId('approval-decline-why').click();
  const reason = card.getByTestId('approval-reason-text');
  await expect(reason).toBeFocused();
  await expect(card.getByTestId('approval-reason-send')).toBeDisabled();
  const why = 'Never delete client notes; archive them instead.';
  await reason.fill(why);
  await everyWay(page, 'card-decline-why', async () => {
    await card.scrollIntoViewIfNeeded();
  });
  await card.getByTestId('approval-reason-send').click();
  await expect(card).toHaveAttribute('data-state', 'declined', { timeout: REPLY_TIMEOUT });
  await turnOver(page);
  // The model read the reason as the tool's error; nothing ran.
  await expect(page.getByTestId('message-assistant')).toContainText(why);
  expect(await demoCalls(request, 'delete_note')).toBe(before);
  // The decided card keeps its story: who, when, and what it told the
  // assistant — also after a reload.
  const story = card.getByTestId('approval-story');
  await expect(story).toContainText(/^Declined by you at \d{4}-\d\d-\d\d \d\d:\d\d/);
  await expect(story).toContainText(`You told the assistant: “${why}”`);
  await page.reload();
  await expect(page.getByTestId('approval-story')).toContainText(why);
});

test('a waiting card is never lost: opened into view, badged, counted, listed, one key away', async ({
  page,
}) => {
  await signUp(page, 'lost', 'Ada Approver');
  await addDemoConnector(page, ['add_note']);
  await newChat(page);
  const chatUrl = page.url();
  await ask(page, 'add_note', { title: 'Filing', body: LONG_BODY });
  await waitingCard(page, 'add_note');

  // Elsewhere, the app says a decision waits: the tab title, the chat's
  // badge in the list, and Home's "Waiting for you".
  await page.goto('/');
  await expect(page).toHaveTitle('(1) waiting · Countersign');
  const link = page.getByTestId('chat-link').filter({ has: page.getByTestId('chat-waiting-badge') });
  const waiting = page.getByTestId('waiting-for-you');
  await expect(waiting.getByTestId('waiting-item')).toHaveCount(1);
  await expect(waiting.getByTestId('waiting-item')).toContainText(`${DEMO_NAME}: add_note wants to run`);
  await everyWay(page, 'card-home-waiting');
  await page.setViewportSize({ width: 1280, height: 800 });
  await expect(link).toHaveCount(1);
  await expect(link.getByTestId('chat-waiting-badge')).toHaveText('1');
  await expect(link).toHaveAccessibleName(/1 decision waiting for you/);

  // Opening the chat brings the card's start into view, and its decision
  // bar stays in sight though the card is taller than the pane.
  await waiting.getByTestId('waiting-item').getByRole('link').click();
  await expect(page).toHaveURL(chatUrl);
  const card = await waitingCard(page, 'add_note');
  await expect(card.getByTestId('approval-title')).toBeInViewport();
  await expect(card.getByTestId('approval-decision')).toBeInViewport();
  await expect(page.getByTestId('scroll-latest')).toHaveCount(0);
  await everyWay(page, 'card-opened', async () => {
    await page.getByTestId('go-to-waiting').click();
    await expect(card.getByTestId('approval-decision')).toBeInViewport();
  });

  // From the composer, one Shift+Tab reaches "Go to the call…", which
  // brings the card back and puts the keyboard on it.
  await page.getByTestId('transcript').evaluate((t) => {
    t.scrollTop = 0;
  });
  await page.getByTestId('composer-input').focus();
  await page.keyboard.press('Shift+Tab');
  const go = page.getByTestId('go-to-waiting');
  await expect(go).toBeFocused();
  await expect(go).toHaveText('Go to the waiting call ↑');
  await page.keyboard.press('Enter');
  await expect(card).toBeFocused();
  await expect(card.getByTestId('approval-title')).toBeInViewport();

  // Decided: nothing waits any more, anywhere.
  await card.getByTestId('approval-decline').click();
  await expect(card).toHaveAttribute('data-state', 'declined', { timeout: REPLY_TIMEOUT });
  await expect(page.getByTestId('go-to-waiting')).toHaveCount(0);
  await expect(page).not.toHaveTitle(/waiting/, { timeout: 15_000 });
  await expect(page.getByTestId('chat-waiting-badge')).toHaveCount(0);
});

test('edit and allow: the user changes the arguments, a wrong edit is refused, and exactly the edit runs once', async ({
  page,
  request,
}) => {
  await signUp(page, 'edit', 'Ada Approver');
  await addDemoConnector(page, ['add_note']);
  await newChat(page);
  const before = await demoCalls(request, 'add_note');
  await ask(page, 'add_note', { title: 'Wire', body: 'Wire $50,000 to account 12345678' });
  const card = await waitingCard(page, 'add_note');

  // The editor is the tool's form, filled with the arguments shown.
  await card.getByTestId('approval-edit').click();
  const form = card.getByTestId('approval-edit-form');
  await expect(form).toHaveAttribute('data-mode', 'form');
  const title = form.locator('[data-field="title"] input');
  const body = form.locator('[data-field="body"] input');
  await expect(title).toHaveValue('Wire');
  await expect(body).toHaveValue('Wire $50,000 to account 12345678');
  // The schema, checked in the browser: an empty title is named, nothing is sent,
  // and the form will not turn into JSON past it.
  await title.fill('');
  await card.getByTestId('approval-edit-send').click();
  await expect(form.locator('[data-field="title"] [data-testid="input-field-error"]')).toBeVisible();
  await card.getByTestId('approval-edit-mode').click();
  await expect(form).toHaveAttribute('data-mode', 'form');
  expect(await demoCalls(request, 'add_note')).toBe(before);

  // As JSON, for what a form cannot say: it holds what the form held.
  await title.fill('Wire');
  await card.getByTestId('approval-edit-mode').click();
  await expect(form).toHaveAttribute('data-mode', 'json');
  const text = card.getByTestId('approval-edit-text');
  await expect(text).toBeFocused();
  expect(JSON.parse(await text.inputValue())).toEqual({ title: 'Wire', body: 'Wire $50,000 to account 12345678' });
  // Not JSON: said at once, nothing sent.
  await text.fill('{"title": "Wire",');
  await card.getByTestId('approval-edit-send').click();
  await expect(card.getByTestId('approval-edit-error')).toHaveText('Write one JSON object.');
  // Against the tool's schema (an empty title): the server refuses, names it, nothing runs.
  await text.fill('{"title": "", "body": "Call the client first."}');
  await card.getByTestId('approval-edit-send').click();
  await expect(card.getByTestId('approval-error')).toContainText('/title');
  await expect(card).toHaveAttribute('data-state', 'pending');
  expect(await demoCalls(request, 'add_note')).toBe(before);

  // A fitting edit in the form runs, once, exactly as written; the card shows it and says so.
  await card.getByTestId('approval-edit').click();
  await expect(form).toHaveAttribute('data-mode', 'form');
  await body.fill('Call the client first.');
  await everyWay(page, 'card-edit', async () => {
    await form.scrollIntoViewIfNeeded();
  });
  await card.getByTestId('approval-edit-send').click();
  await turnOver(page);
  await expect(card.getByTestId('approval-story')).toContainText('You edited the arguments first: shown here is what ran.');
  expect(await demoCalls(request, 'add_note')).toBe(before + 1);
  await card.getByTestId('approval-details-toggle').click();
  await expect(card.getByTestId('approval-arguments')).toContainText('Call the client first.');
  await expect(card.getByTestId('approval-arguments')).not.toContainText('12345678');
  await expect(page.getByTestId('message-assistant').last()).toContainText('The user edited the arguments');
});

/** In place of the browser's notifications, before the app loads: one
 * that records what it was asked and shows, starting unasked; and a
 * `document.hidden` the test sets (`window.__hidden`). */
function fakeNotifications() {
  const w = window as unknown as {
    __notes: { asked: number; shown: { title: string; body?: string; tag?: string }[] };
    __hidden?: boolean;
    Notification: unknown;
  };
  w.__notes = { asked: 0, shown: [] };
  class FakeNotification {
    static permission = 'default';
    static requestPermission() {
      w.__notes.asked += 1;
      FakeNotification.permission = 'granted';
      return Promise.resolve('granted');
    }
    onclick: unknown = null;
    constructor(title: string, options?: { body?: string; tag?: string }) {
      w.__notes.shown.push({ title, body: options?.body, tag: options?.tag });
    }
  }
  w.Notification = FakeNotification;
  Object.defineProperty(document, 'hidden', { configurable: true, get: () => w.__hidden === true });
}

/** What the fake was asked and what it showed. */
async function notes(page: Page) {
  return page.evaluate(
    () => (window as unknown as { __notes: { asked: number; shown: { title: string; body?: string }[] } }).__notes,
  );
}

test('a browser notification is offered on a card, never at load, and tells of a card in a hidden tab', async ({
  page,
}) => {
  await page.addInitScript(fakeNotifications);
  await signUp(page, 'notify', 'Ada Approver');
  await addDemoConnector(page, ['add_note']);
  await newChat(page);
  expect((await notes(page)).asked).toBe(0);
  await ask(page, 'add_note', { title: 'Filing', body: 'Short note.' });
  let card = await waitingCard(page, 'add_note');

  // The offer is on the waiting card; loading asked nothing.
  const offer = card.getByTestId('approval-notify-offer');
  await expect(offer).toBeVisible();
  expect((await notes(page)).asked).toBe(0);
  await everyWay(page, 'card-notify-offer', async () => {
    await offer.scrollIntoViewIfNeeded();
  });
  // "Not now" is remembered across a reload.
  await card.getByTestId('approval-notify-dismiss').click();
  await expect(offer).toHaveCount(0);
  await page.reload();
  card = await waitingCard(page, 'add_note');
  await expect(card.getByTestId('approval-notify-offer')).toHaveCount(0);
  expect((await notes(page)).asked).toBe(0);

  // Offered again, "Notify me" asks the browser, once.
  await page.evaluate(() => localStorage.removeItem('countersign.notify-offer'));
  await page.reload();
  card = await waitingCard(page, 'add_note');
  await card.getByTestId('approval-notify-ask').click();
  await expect(card.getByTestId('approval-notify-offer')).toHaveCount(0);
  expect((await notes(page)).asked).toBe(1);
  expect((await notes(page)).shown).toEqual([]);
  await card.getByTestId('approval-decline').click();
  await expect(card).toHaveAttribute('data-state', 'declined', { timeout: REPLY_TIMEOUT });
  await turnOver(page);

  // With the tab in the background, the next card is announced.
  await page.evaluate(() => {
    (window as unknown as { __hidden: boolean }).__hidden = true;
  });
  await ask(page, 'add_note', { title: 'Second', body: 'Another note.' });
  await expect
    .poll(async () => (await notes(page)).shown, { timeout: REPLY_TIMEOUT })
    .toEqual([{ title: 'A call waits for your decision', body: `${DEMO_NAME}: add_note`, tag: expect.any(String) }]);
  await page.evaluate(() => {
    (window as unknown as { __hidden: boolean }).__hidden = false;
  });

  // Stopping the reply while it waits is not a decline: the card says so.
  const second = page.getByTestId('approval-card').last();
  await expect(second).toHaveAttribute('data-state', 'pending');
  await page.getByTestId('stop-turn').click();
  await turnOver(page);
  await expect(second.getByTestId('approval-story')).toHaveText(
    /^Not decided: the reply was stopped at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d .* while this call waited; nothing ran\.$/,
  );
});

test('after adding a connector its review opens, says nothing is offered yet, and Save stays in sight', async ({
  page,
}) => {
  await signUp(page, 'review', 'Ada Approver');
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto('/settings');
  await page.getByTestId('connectors-section').getByTestId('available-add').first().click();
  const row = demoRow(page);
  await expect(row.getByTestId('connector-status')).toHaveAttribute('data-status', 'ok');
  // Open by itself, and says why it matters.
  await expect(row.getByTestId('connector-review')).toHaveAttribute('aria-expanded', 'true');
  const tools = row.getByTestId('tool-row');
  await expect(tools.first()).toBeVisible();
  const count = await tools.count();
  expect(count).toBeGreaterThan(5);
  await expect(row.getByTestId('review-offered')).toHaveText(`0 of ${count} tools offered until you review`);
  // The save button is in sight while the list's start is, and at its end.
  await tools.first().scrollIntoViewIfNeeded();
  await expect(row.getByTestId('review-save')).toBeInViewport();
  await tools.nth(Math.floor(count / 2)).scrollIntoViewIfNeeded();
  await expect(row.getByTestId('review-save')).toBeInViewport();
  await everyWay(page, 'card-review-after-add', async () => {
    await row.getByTestId('review-offered').scrollIntoViewIfNeeded();
  });
  await tools.first().getByTestId('tool-keep').check();
  await row.getByTestId('review-save').click();
  await expect(row.getByTestId('connector-tool-counts')).toContainText('1 kept');
  await expect(row.getByTestId('review-offered')).toHaveText(`1 of ${count} tools offered to the assistant`);
});

test('a decided card keeps its story: who allowed it and when, the answers given, the tool\'s own time', async ({
  page,
}) => {
  await signUp(page, 'story', 'Ada Approver');
  await addDemoConnector(page, ['file_note']);
  await newChat(page);
  await ask(page, 'file_note', { title: 'Docketing portal filing' });
  const card = await waitingCard(page, 'file_note');
  await allow(card);
  // The server asks; the user answers, taking their time.
  const input = page.getByTestId('input-card').last();
  await expect(input).toHaveAttribute('data-state', 'pending', { timeout: REPLY_TIMEOUT });
  await input.getByLabel('Matter number').fill('2026-114');
  const secret = 'pk-live-7f3a9c';
  await input.getByLabel('Docketing portal API key').fill(secret);
  await page.waitForTimeout(1500);
  await input.getByTestId('input-accept').click();
  await turnOver(page);

  // The input card: what was sent, the key masked, and when.
  const answers = input.getByTestId('input-answers');
  await expect(answers).toContainText(/You answered at \d{4}-\d\d-\d\d \d\d:\d\d/);
  await expect(answers.getByTestId('input-answer')).toContainText(['2026-114']);
  await expect(answers).toContainText('Docketing portal API key');
  await expect(answers).toContainText('••••••');
  await expect(answers).not.toContainText(secret);
  // The approval card: who allowed it, when, and the tool's own time
  // apart from the wait for the answers.
  const story = card.getByTestId('approval-story');
  await expect(story).toContainText(/^Allowed once by you at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d [^.]+\. It ran for [\d.]+ (ms|s) on its server, and waited [\d.]+ s for your answers\.$/);
  await everyWay(page, 'card-story', async () => {
    await card.scrollIntoViewIfNeeded();
  });
  // The same after a reload: the story is the server's, not this page's.
  await page.reload();
  await expect(page.getByTestId('input-answers')).toContainText('••••••');
  await expect(page.getByTestId('approval-story')).toContainText('Allowed once by you at');
  await expect(page.locator('body')).not.toContainText(secret);
});

