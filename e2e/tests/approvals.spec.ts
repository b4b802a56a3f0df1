// Journeys through the approval card (DESIGN §6, §9): the offline demo model
// proposes a call to a tool of the demo MCP server, the chat shows a card
// with the exact arguments, and nothing runs until the user decides.
//
// - Allow once: the call runs once, the card shows the result, and a reload
//   shows the finished card as it ended.
// - Decline: "Declined", and the demo server is never called (a long
//   argument sits whole in its box, never cut).
// - A reload while the card waits brings the same card back, and Allow once
//   still works.
// - Two tabs: deciding in one updates the other's card.
// - The countdown reaching zero disables the buttons (browser clock moved
//   forward); the server's expiry shows "Expired without a decision".
// - Settings: "Trust this server's safety annotations" asks before it turns
//   on; then a read-only, closed-world tool runs without a card while a
//   write still asks.
//
// Needs, like connectors.spec.ts, the server started with the demo MCP
// server as an available connector, and COUNTERSIGN_E2E_DEMO_ADMIN pointing
// at that demo server (its call log proves what ran). The server-expiry
// journey also needs the server started with a short approval wait
// (COUNTERSIGN_APPROVAL_WAIT_SECS, below COUNTERSIGN_APPROVAL_TTL_SECS) and
// that wait told to this process as COUNTERSIGN_E2E_APPROVAL_WAIT_SECS.
import { expect, test, type Locator, type Page } from '@playwright/test';
import {
  DEMO_NAME,
  REPLY_TIMEOUT,
  guardPages,
  snap,
  demoCalls,
  signUp,
  addDemoConnector,
  newChat,
  ask,
  turnOver, allow } from './support';

const APPROVAL_WAIT_SECS = Number(process.env.COUNTERSIGN_E2E_APPROVAL_WAIT_SECS ?? '');
const SEARCH = { query: 'lease' };

test.setTimeout(120_000);

guardPages();

/** The one approval card on the page, once it waits for a decision. */
async function pendingCard(page: Page, tool: string): Promise<Locator> {
  const card = page.getByTestId('approval-card');
  await expect(card).toHaveCount(1, { timeout: REPLY_TIMEOUT });
  await expect(card.getByTestId('approval-title')).toHaveText(`${DEMO_NAME}: ${tool} wants to run`);
  await expect(card).toHaveAttribute('data-state', 'pending');
  await expect(card.getByTestId('approval-status')).toHaveText('Waiting for your decision');
  await expect(card.getByTestId('approval-allow-once')).toBeEnabled();
  return card;
}

/** The answer's pieces in page order: `text:<its start>` or `card`. */
async function answerOrder(page: Page): Promise<string[]> {
  return page
    .getByTestId('message-assistant')
    .locator('.markdown, [data-testid="approval-card"]')
    .evaluateAll((elements) =>
      elements
        .filter((el) => el.matches('[data-testid="approval-card"]') || !el.closest('[data-testid="approval-card"]'))
        .map((el) => (el.matches('.markdown') ? `text:${(el.textContent ?? '').trim().slice(0, 80)}` : 'card')),
    );
}

test('Allow once runs the call once and the card shows the result, also after a reload', async ({
  page,
  request,
}) => {
  await signUp(page, 'allow', 'Ada Approver');
  await addDemoConnector(page, ['search_notes']);
  await newChat(page);
  const before = await demoCalls(request, 'search_notes');

  await ask(page, 'search_notes', SEARCH);
  const card = await pendingCard(page, 'search_notes');

  // The evidence: exact arguments, where the call goes, why it asks, and
  // how long the decision can wait.
  await expect(card.getByTestId('approval-arguments')).toHaveText('{\n  "query": "lease"\n}');
  await expect(card.getByTestId('approval-destination')).toHaveText(/^127\.0\.0\.1:\d+$/);
  await expect(card.getByTestId('approval-reason')).not.toBeEmpty();
  await expect(card.getByTestId('approval-countdown')).toHaveText(/^Expires in \d+:\d\d$/);
  // Nothing ran while it waits.
  expect(await demoCalls(request, 'search_notes')).toBe(before);

  // The tool as reviewed, and its declared risk: search_notes declares
  // it only reads and stays inside, so the card is not styled as risky
  // and "Allow once" is the preselected button.
  await expect(card).toHaveAttribute('data-risky', 'false');
  await expect(card.getByTestId('approval-tool-title')).toHaveText('Search notes');
  await expect(card.getByTestId('approval-risk').getByRole('listitem')).toHaveText([
    'Only reads data, as its server declares',
    'Stays within its server, as it declares',
  ]);
  await expect(card.getByTestId('approval-allow-once')).toHaveClass(/\bprimary\b/);

  // Accessible: a labelled group; buttons say what they do.
  await expect(page.getByRole('group', { name: `${DEMO_NAME}: search_notes wants to run` })).toBeVisible();
  const allow = card.getByRole('button', { name: 'Allow once' });
  const decline = card.getByRole('button', { name: 'Decline', exact: true });
  await expect(allow).toHaveAccessibleDescription(`Allow this one call to search_notes on ${DEMO_NAME}`);
  await expect(decline).toHaveAccessibleDescription('Decline this call');
  await snap(page, 'approval-card-pending');

  // Decide with the keyboard.
  await allow.focus();
  await page.keyboard.press('Enter');
  await expect(card.getByTestId('approval-status')).toContainText('Allowed once — ran successfully', {
    timeout: REPLY_TIMEOUT,
  });
  await expect(card).toHaveAttribute('data-state', 'ok');
  // Not "wants to run" once it ran (issue 12 item 6).
  await expect(card.getByTestId('approval-title')).toHaveText(`${DEMO_NAME}: search_notes ran`);
  await expect(card.getByTestId('approval-allow-once')).toHaveCount(0);
  await expect(card.getByTestId('approval-countdown')).toHaveCount(0);
  // The model got the result.
  const answer = page.getByTestId('message-assistant');
  await expect(answer).toContainText('returned:', { timeout: REPLY_TIMEOUT });
  await expect(answer).toContainText('lease');
  await turnOver(page);
  expect(await demoCalls(request, 'search_notes')).toBe(before + 1);
  await snap(page, 'approval-card-allowed');
  const liveOrder = await answerOrder(page);

  // Decided, the card folds to its title and status: the request is one
  // press away, and what the tool returned is there to read (item 8).
  await expect(card).toHaveAttribute('data-folded', 'true');
  await expect(card.getByTestId('approval-evidence')).toBeHidden();
  const details = card.getByTestId('approval-details-toggle');
  await expect(details).toHaveText('Show the request');
  await expect(details).toHaveAttribute('aria-expanded', 'false');
  const result = card.getByTestId('tool-result');
  await expect(result.locator('summary')).toHaveText(/^Result \(\d+ characters\)$/);
  await expect(card.getByTestId('tool-result-text')).toBeHidden();
  await snap(page, 'approval-card-folded');
  await result.locator('summary').click();
  await expect(card.getByTestId('tool-result-text')).toContainText('lease');
  await details.click();
  await expect(details).toHaveAttribute('aria-expanded', 'true');
  await expect(card.getByTestId('approval-arguments')).toBeVisible();
  await snap(page, 'approval-card-unfolded');
  // Named as the card names it, never by the model's slug (issue 12 item 8).
  expect(liveOrder[0]).toMatch(new RegExp(`^text:I will call ${DEMO_NAME}: search_notes with those arguments`));
  await expect(page.getByTestId('message-assistant')).toContainText(`${DEMO_NAME}: search_notes returned:`);
  await expect(page.getByTestId('message-assistant')).not.toContainText('countersign_demo__');
  expect(liveOrder[1]).toBe('card');

  // A reload shows the finished card as it ended, with no buttons, and
  // the text where it was: "I will call …" stays above its card (issue 12
  // item 5).
  await page.reload();
  await expect(page.getByTestId('approval-card')).toHaveCount(1);
  expect(await answerOrder(page)).toEqual(liveOrder);
  const reloaded = page.getByTestId('approval-card');
  await expect(reloaded).toHaveCount(1);
  await expect(reloaded).toHaveAttribute('data-state', 'ok');
  await expect(reloaded.getByTestId('approval-status')).toContainText('Allowed once — ran successfully');
  await expect(reloaded.getByTestId('approval-allow-once')).toHaveCount(0);
  expect(await demoCalls(request, 'search_notes')).toBe(before + 1);
});

test('Decline shows "Declined" and the server is never called; a long argument is all there in its box', async ({
  page,
  request,
}) => {
  await signUp(page, 'decline', 'Ada Approver');
  await addDemoConnector(page, ['add_note']);
  await newChat(page);
  const before = await demoCalls(request, 'add_note');

  const body = `${'The tenant shall keep the premises in good repair and condition. '.repeat(4)}END-OF-BODY`;
  await ask(page, 'add_note', { title: 'Repair covenant', body });
  const card = await pendingCard(page, 'add_note');

  // The long body sits whole in its own box, its end and length in sight
  // under it; under 500 characters and unflagged, Allow does not wait for
  // it (card.spec.ts has the longer case).
  const args = card.getByTestId('approval-arguments');
  await expect(args).toContainText('"title": "Repair covenant"');
  await expect(card.getByTestId('approval-long-box')).toHaveText(JSON.stringify(body));
  await expect(card.getByTestId('approval-long-end')).toContainText('END-OF-BODY');
  await expect(card.getByTestId('approval-long-value')).toHaveAttribute('data-must-read', 'false');
  await expect(card.getByTestId('approval-allow-once')).toBeEnabled();
  const toggle = card.getByTestId('approval-long-toggle');
  await expect(toggle).toHaveText(`Show all ${body.length} characters`);
  await expect(toggle).toHaveAttribute('aria-expanded', 'false');
  await toggle.click();
  await expect(toggle).toHaveAttribute('aria-expanded', 'true');
  await expect(card.getByTestId('approval-long-value')).toContainText(JSON.stringify(body));

  await card.getByTestId('approval-decline').click();
  await expect(card.getByTestId('approval-status')).toHaveText('Declined', { timeout: REPLY_TIMEOUT });
  await expect(card).toHaveAttribute('data-state', 'declined');
  await expect(card.getByTestId('approval-decline')).toHaveCount(0);
  await turnOver(page);
  // The model was told; the demo server never saw the call. The reply says
  // it in words, not the raw `{"ok":false,…}` (issue 12 item 6), and the
  // title says what became of the call.
  await expect(page.getByTestId('message-assistant')).toContainText(
    'did not run: The user declined this tool call.',
  );
  await expect(page.getByTestId('message-assistant')).not.toContainText('"ok"');
  await expect(card.getByTestId('approval-title')).toHaveText(`${DEMO_NAME}: add_note was declined`);
  expect(await demoCalls(request, 'add_note')).toBe(before);
  await snap(page, 'approval-card-declined');

  await page.reload();
  await expect(page.getByTestId('approval-card')).toHaveAttribute('data-state', 'declined');
  await expect(page.getByTestId('approval-status')).toHaveText('Declined');
});

test('a tool that declares nothing is shown as the riskiest kind, never as safe', async ({ page, request }) => {
  await signUp(page, 'nothing', 'Ada Approver');
  await addDemoConnector(page, ['echo']);
  await newChat(page);
  const before = await demoCalls(request, 'echo');
  await ask(page, 'echo', { text: 'hello' });
  const card = await pendingCard(page, 'echo');
  await expect(card).toHaveAttribute('data-risky', 'true');
  await expect(card.getByTestId('approval-tool-title')).toHaveText('Echo');
  await expect(card.getByTestId('approval-risk').getByRole('listitem')).toHaveText([
    'Declares nothing about what it does: treat it as able to delete or change data and reach outside',
    'Can reach outside its server',
  ]);
  await expect(card.getByTestId('approval-allow-once')).not.toHaveClass(/\bprimary\b/);
  await card.scrollIntoViewIfNeeded();
  await snap(page, 'approval-card-declares-nothing');
  await page.setViewportSize({ width: 390, height: 844 });
  await card.scrollIntoViewIfNeeded();
  await snap(page, 'approval-card-declares-nothing-390');
  await page.setViewportSize({ width: 1280, height: 720 });
  await card.getByTestId('approval-decline').click();
  await expect(card.getByTestId('approval-status')).toHaveText('Declined', { timeout: REPLY_TIMEOUT });
  await turnOver(page);
  expect(await demoCalls(request, 'echo')).toBe(before);
});

test('a reload while the card waits brings the same card back, and Allow once still works', async ({
  page,
  request,
}) => {
  await signUp(page, 'reload', 'Ada Approver');
  await addDemoConnector(page, ['search_notes']);
  await newChat(page);
  const before = await demoCalls(request, 'search_notes');

  await ask(page, 'search_notes', SEARCH);
  const card = await pendingCard(page, 'search_notes');
  const id = await card.getAttribute('data-approval-id');
  expect(id).toBeTruthy();

  await page.reload();
  const again = await pendingCard(page, 'search_notes');
  await expect(again).toHaveAttribute('data-approval-id', id!);
  await expect(again.getByTestId('approval-arguments')).toHaveText('{\n  "query": "lease"\n}');
  await expect(page.getByTestId('stop-turn')).toBeVisible();
  expect(await demoCalls(request, 'search_notes')).toBe(before);

  // Enter while the turn runs is not silently dropped: the hint says so,
  // and the draft stays (issue 12 item 6).
  const input = page.getByTestId('composer-input');
  await input.fill('and one more thing');
  await input.press('Enter');
  await expect(page.getByTestId('composer-hint')).toContainText('Not sent yet');
  await expect(input).toHaveValue('and one more thing');

  await allow(again);
  await expect(again.getByTestId('approval-status')).toContainText('Allowed once — ran successfully', {
    timeout: REPLY_TIMEOUT,
  });
  await turnOver(page);
  await expect(page.getByTestId('message-assistant')).toContainText('returned:');
  expect(await demoCalls(request, 'search_notes')).toBe(before + 1);
  await expect(page.getByTestId('composer-hint')).toHaveText('Enter sends · Shift+Enter adds a new line');
});

test('deciding in one tab updates the card in the other', async ({ page, context, request }) => {
  await signUp(page, 'tabs', 'Ada Approver');
  await addDemoConnector(page, ['search_notes']);
  await newChat(page);
  const before = await demoCalls(request, 'search_notes');

  await ask(page, 'search_notes', SEARCH);
  const first = await pendingCard(page, 'search_notes');
  const id = await first.getAttribute('data-approval-id');

  // The same chat in a second tab (same session) shows the same card.
  const other = await context.newPage();
  await other.goto(page.url());
  const second = await pendingCard(other, 'search_notes');
  await expect(second).toHaveAttribute('data-approval-id', id!);

  await allow(first);
  for (const card of [first, second]) {
    await expect(card.getByTestId('approval-status')).toContainText('Allowed once — ran successfully', {
      timeout: REPLY_TIMEOUT,
    });
    await expect(card.getByTestId('approval-allow-once')).toHaveCount(0);
  }
  await turnOver(other);
  await turnOver(page);
  expect(await demoCalls(request, 'search_notes')).toBe(before + 1);

  // And the other way round: the second tab declines the next call.
  await ask(page, 'search_notes', SEARCH);
  await expect(page.getByTestId('approval-card')).toHaveCount(2, { timeout: REPLY_TIMEOUT });
  await expect(other.getByTestId('approval-card')).toHaveCount(2, { timeout: REPLY_TIMEOUT });
  const next = other.getByTestId('approval-card').last();
  await expect(next).toHaveAttribute('data-state', 'pending');
  await next.getByTestId('approval-decline').click();
  const mirrored = page.getByTestId('approval-card').last();
  await expect(mirrored.getByTestId('approval-status')).toHaveText('Declined', { timeout: REPLY_TIMEOUT });
  await expect(mirrored.getByTestId('approval-decline')).toHaveCount(0);
  await turnOver(page);
  expect(await demoCalls(request, 'search_notes')).toBe(before + 1);
  await other.close();
});

test('when the countdown reaches zero the buttons stop, before the server says anything', async ({
  page,
  request,
}) => {
  await page.clock.install();
  await signUp(page, 'countdown', 'Ada Approver');
  await addDemoConnector(page, ['search_notes']);
  await newChat(page);
  const before = await demoCalls(request, 'search_notes');

  await ask(page, 'search_notes', SEARCH);
  const card = await pendingCard(page, 'search_notes');
  const countdown = card.getByTestId('approval-countdown');
  const shown = await countdown.innerText();
  await page.clock.fastForward('00:02');
  await expect(countdown).not.toHaveText(shown);

  // Past any approval's lifetime by this browser's clock.
  await page.clock.fastForward('10:00');
  await expect(card.getByTestId('approval-status')).toHaveText('Expired without a decision');
  await expect(card).toHaveAttribute('data-state', 'expired');
  await expect(card.getByTestId('approval-allow-once')).toBeDisabled();
  await expect(card.getByTestId('approval-decline')).toBeDisabled();

  // Stop ends the turn; its waiting call ends declined, and never ran.
  await page.getByTestId('stop-turn').click();
  await turnOver(page);
  await expect(card.getByTestId('approval-allow-once')).toHaveCount(0);
  expect(await demoCalls(request, 'search_notes')).toBe(before);
});

test('a call nobody decides expires: "Expired without a decision", and nothing ran', async ({
  page,
  request,
}) => {
  expect(
    APPROVAL_WAIT_SECS,
    'COUNTERSIGN_E2E_APPROVAL_WAIT_SECS must be the server\'s (short) COUNTERSIGN_APPROVAL_WAIT_SECS',
  ).toBeGreaterThan(0);
  test.setTimeout(120_000 + APPROVAL_WAIT_SECS * 1000);
  await signUp(page, 'expiry', 'Ada Approver');
  await addDemoConnector(page, ['search_notes']);
  await newChat(page);
  const before = await demoCalls(request, 'search_notes');

  await ask(page, 'search_notes', SEARCH);
  const card = await pendingCard(page, 'search_notes');
  // The countdown is to when the turn stops waiting (decide_by), not to
  // the later expiry: it never shows time that is not there.
  const shown = (await card.getByTestId('approval-countdown').innerText()).match(/(\d+):(\d\d)/);
  expect(shown, 'a countdown m:ss').not.toBeNull();
  const left = Number(shown![1]) * 60 + Number(shown![2]);
  expect(left).toBeLessThanOrEqual(APPROVAL_WAIT_SECS);
  expect(left).toBeGreaterThan(APPROVAL_WAIT_SECS - 15);
  await expect(card.getByTestId('approval-status')).toHaveText('Expired without a decision', {
    timeout: (APPROVAL_WAIT_SECS + 15) * 1000,
  });
  await expect(card).toHaveAttribute('data-state', 'expired');
  await expect(card.getByTestId('approval-allow-once')).toHaveCount(0);
  await turnOver(page);
  await expect(page.getByTestId('message-assistant')).toContainText('did not run');
  expect(await demoCalls(request, 'search_notes')).toBe(before);
  await snap(page, 'approval-card-expired');

  await page.reload();
  await expect(page.getByTestId('approval-card')).toHaveAttribute('data-state', 'expired');
});

test('trusting a server\'s annotations asks first; then its read-only tool runs without a card and a write still asks', async ({
  page,
  request,
}) => {
  await signUp(page, 'trust', 'Ada Approver');
  const row = await addDemoConnector(page, ['search_notes', 'add_note']);
  const toggle = row.getByRole('switch', { name: "Trust this server's safety annotations" });
  await expect(toggle).toHaveAttribute('aria-checked', 'false');
  await expect(row.getByTestId('connector-trust-note')).toHaveText(
    'Off (recommended): every tool call asks for your approval.',
  );

  // Turning it on warns and asks; "Keep asking" changes nothing.
  await toggle.click();
  const dialog = row.getByTestId('connector-trust-dialog');
  await expect(dialog.getByTestId('connector-trust-warning')).toContainText('writes its own annotations');
  await expect(dialog.getByTestId('connector-trust-warning')).toContainText('read-only and closed-world');
  await expect(dialog.getByTestId('connector-trust-cancel')).toBeFocused();
  await snap(page, 'connector-trust-warning');
  await dialog.getByTestId('connector-trust-cancel').click();
  await expect(dialog).toHaveCount(0);
  await expect(toggle).toHaveAttribute('aria-checked', 'false');
  await expect(toggle).toBeFocused();

  await toggle.click();
  await row.getByTestId('connector-trust-confirm').click();
  await expect(toggle).toHaveAttribute('aria-checked', 'true');
  await expect(row.getByTestId('connector-trust-note')).toContainText('On:');

  // Stored: still on after a reload.
  await page.reload();
  const stored = page
    .locator(`[data-testid="connector-row"][data-connector-name="${DEMO_NAME}"]`)
    .getByRole('switch', { name: "Trust this server's safety annotations" });
  await expect(stored).toHaveAttribute('aria-checked', 'true');

  // search_notes declares itself read-only and closed-world: no card.
  await newChat(page);
  const searches = await demoCalls(request, 'search_notes');
  await ask(page, 'search_notes', SEARCH);
  await expect(page.getByTestId('message-assistant')).toContainText('returned:', { timeout: REPLY_TIMEOUT });
  await expect(page.getByTestId('tool-call').getByTestId('tool-status')).toHaveText('OK');
  await expect(page.getByTestId('approval-card')).toHaveCount(0);
  await turnOver(page);
  expect(await demoCalls(request, 'search_notes')).toBe(searches + 1);

  // add_note writes: it still asks.
  await ask(page, 'add_note', { title: 'Trust test', body: 'Should not be written.' });
  const card = await pendingCard(page, 'add_note');
  await expect(card.getByTestId('approval-reason')).toContainText('read-only and closed-world');
  await card.getByTestId('approval-decline').click();
  await expect(card.getByTestId('approval-status')).toHaveText('Declined', { timeout: REPLY_TIMEOUT });
  await turnOver(page);

  // Turning it off again takes one click, no questions.
  await page.getByTestId('nav-settings').click();
  const off = page
    .locator(`[data-testid="connector-row"][data-connector-name="${DEMO_NAME}"]`)
    .getByRole('switch', { name: "Trust this server's safety annotations" });
  await off.click();
  await expect(off).toHaveAttribute('aria-checked', 'false');
  await expect(page.getByTestId('connector-trust-dialog')).toHaveCount(0);
});
