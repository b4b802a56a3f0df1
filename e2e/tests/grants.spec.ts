// Journeys through the grants of the approval card (DESIGN §5 rules 1 and
// 2, §6, §9): "Always allow this tool" and "Allow for this turn", the
// origin chips that say what let a call run, and the "always allowed ·
// Revoke" chip in Settings → Connectors.
//
// - Always allow: the next identical call runs with no card and says it ran
//   under the always-allow rule; Settings counts the rule and shows the
//   chip; Revoke makes the next call ask again.
// - Allow for this turn: of two calls to the same tool in one turn, only the
//   first asks, the second says the turn's grant let it run; the next
//   message asks again.
//
// Needs, like approvals.spec.ts, the server started with the demo MCP server
// as an available connector, and COUNTERSIGN_E2E_DEMO_ADMIN pointing at that
// demo server (its call log proves what ran).
import { expect, test, type Locator, type Page } from '@playwright/test';
import {
  DEMO_NAME,
  REPLY_TIMEOUT,
  guardPages,
  snap,
  demoCalls,
  demoAdmin,
  signUp,
  demoRow,
  addDemoConnector,
  newChat,
  say,
  ask,
  turnOver, allow, openReview } from './support';

const NOTE = { title: 'Grant test', body: 'Written under a rule.' };

test.setTimeout(120_000);

guardPages();

/** The `count`-th approval card on the page (1-based), once it waits for a decision. */
async function waitingCard(page: Page, tool: string, count: number): Promise<Locator> {
  const cards = page.getByTestId('approval-card');
  await expect(cards).toHaveCount(count, { timeout: REPLY_TIMEOUT });
  const card = cards.nth(count - 1);
  await expect(card.getByTestId('approval-title')).toHaveText(`${DEMO_NAME}: ${tool} wants to run`);
  await expect(card).toHaveAttribute('data-state', 'pending');
  await expect(card.getByTestId('approval-allow-once')).toBeEnabled();
  return card;
}

/** Declines a waiting card and waits for the turn to end. */
async function decline(page: Page, card: Locator) {
  await card.getByTestId('approval-decline').click();
  await expect(card.getByTestId('approval-status')).toHaveText('Declined', { timeout: REPLY_TIMEOUT });
  await turnOver(page);
}

test('Always allow: the next identical call runs without a card under the rule; Revoke in Settings makes it ask again', async ({
  page,
  request,
}) => {
  await signUp(page, 'always', 'Grace Grantor');
  const row = await addDemoConnector(page, ['add_note']);
  await expect(row.getByTestId('connector-grant-count')).toHaveText('No always-allowed tools');
  await newChat(page);
  const chatUrl = page.url();
  const before = await demoCalls(request, 'add_note');

  await ask(page, 'add_note', NOTE);
  const card = await waitingCard(page, 'add_note', 1);

  // Four choices, each saying what it does; reachable with the keyboard.
  const once = card.getByRole('button', { name: 'Allow once' });
  const turn = card.getByRole('button', { name: 'Allow for this turn' });
  const always = card.getByRole('button', { name: 'Always allow this tool' });
  await expect(turn).toHaveAccessibleDescription(
    `Allow calls to add_note on ${DEMO_NAME} for the rest of this reply`,
  );
  await expect(always).toHaveAccessibleDescription(
    `Always allow add_note on ${DEMO_NAME} until you revoke it or the tool changes`,
  );
  await expect(card.getByRole('button', { name: 'Decline', exact: true })).toBeVisible();
  // add_note declares it writes (but deletes nothing) and stays inside: a
  // risky call, styled so, with its reviewed title and description, and
  // no button preselected.
  await expect(card).toHaveAttribute('data-risky', 'true');
  await expect(card.getByTestId('approval-tool-title')).toHaveText('Add note');
  await expect(card.getByTestId('approval-tool-description')).toContainText('Adds a note to the demo notebook');
  await expect(card.getByTestId('approval-risk').getByRole('listitem')).toHaveText([
    'Can change data (it declares it deletes nothing)',
    'Stays within its server, as it declares',
  ]);
  // Only the concern is in the danger colour; the reassuring line is plain.
  const lines = card.getByTestId('approval-risk').getByRole('listitem');
  await expect(lines.nth(0)).toHaveAttribute('data-concern', 'true');
  await expect(lines.nth(1)).toHaveAttribute('data-concern', 'false');
  const colour = (i: number) => lines.nth(i).evaluate((el) => getComputedStyle(el).color);
  expect(await colour(0)).not.toBe(await colour(1));
  await expect(once).not.toHaveClass(/\bprimary\b/);
  await snap(page, 'grants-card-four-buttons');
  await once.focus();
  await page.keyboard.press('Tab');
  await expect(turn).toBeFocused();
  await page.keyboard.press('Tab');
  await expect(always).toBeFocused();
  await page.keyboard.press('Enter');
  // Risky: "Always allow" asks once more, and nothing is decided yet.
  const confirm = card.getByTestId('approval-always-confirm');
  await expect(confirm).toContainText(
    `Always allow add_note on ${DEMO_NAME}? It can change data. Every later call, with any arguments, will run without asking`,
  );
  await expect(card.getByTestId('approval-always-confirm-yes')).toBeFocused();
  await expect(card).toHaveAttribute('data-state', 'pending');
  expect(await demoCalls(request, 'add_note')).toBe(before);
  await snap(page, 'grants-always-confirm');
  // Cancel goes back to the card; asking again and saying yes decides.
  await card.getByTestId('approval-always-confirm-cancel').click();
  await expect(confirm).toHaveCount(0);
  await always.click();
  await expect(card.getByTestId('approval-always-confirm-yes')).toBeFocused();
  await page.keyboard.press('Enter');

  await expect(card.getByTestId('approval-status')).toContainText('Always allowed — ran successfully', {
    timeout: REPLY_TIMEOUT,
  });
  await expect(card.getByTestId('approval-allow-always')).toHaveCount(0);
  // Who let it run, and when (local time).
  const approvedChip = card.getByTestId('tool-origin');
  await expect(approvedChip).toHaveAttribute('data-origin', 'approved');
  await expect(approvedChip).toHaveText(/^You approved at \d\d:\d\d$/);
  await turnOver(page);
  expect(await demoCalls(request, 'add_note')).toBe(before + 1);

  // The same call again: no card, it runs under the rule.
  await ask(page, 'add_note', NOTE);
  const block = page.getByTestId('tool-call');
  await expect(block).toHaveCount(1, { timeout: REPLY_TIMEOUT });
  await expect(block.getByTestId('tool-status')).toHaveText('OK', { timeout: REPLY_TIMEOUT });
  // Named for people, not by the model-facing slug (item 8); its result
  // folded under it.
  await expect(block.getByTestId('tool-name')).toHaveText(`${DEMO_NAME}: add_note`);
  await expect(block.getByTestId('tool-result').locator('summary')).toHaveText(/^Result \(\d+ characters\)$/);
  const ruleChip = block.getByTestId('tool-origin');
  await expect(ruleChip).toHaveText('Ran under your always-allow rule');
  await expect(ruleChip).toHaveAttribute('data-origin', 'always_grant');
  await turnOver(page);
  await expect(page.getByTestId('approval-card')).toHaveCount(1);
  expect(await demoCalls(request, 'add_note')).toBe(before + 2);
  await snap(page, 'grants-always-chip');

  // A reload tells the same story: the card still says it was always
  // allowed (the server's word, not this page's memory).
  await page.reload();
  await expect(page.getByTestId('approval-card').getByTestId('approval-status')).toContainText(
    'Always allowed — ran successfully',
  );
  await expect(page.getByTestId('approval-card').getByTestId('tool-origin')).toHaveText(
    /^You approved at \d\d:\d\d$/,
  );
  await expect(page.getByTestId('tool-call').getByTestId('tool-origin')).toHaveText(
    'Ran under your always-allow rule',
  );

  // Settings: the count, and the chip on the tool.
  await page.getByTestId('nav-settings').click();
  const settingsRow = demoRow(page);
  await expect(settingsRow.getByTestId('connector-grant-count')).toHaveText('1 always-allowed tool');
  await openReview(settingsRow);
  const tool = settingsRow.locator('[data-testid="tool-row"][data-tool-name="add_note"]');
  const chip = tool.getByTestId('tool-grant');
  await expect(chip).toHaveAttribute('data-suspended', 'false');
  await expect(chip).toContainText('always allowed · Revoke');
  const revoke = chip.getByRole('button', { name: 'Revoke the always-allow rule for add_note' });
  await snap(page, 'grants-settings-chip');
  await revoke.click();
  await expect(settingsRow.getByTestId('review-notice')).toContainText('Revoked', { timeout: REPLY_TIMEOUT });
  await expect(tool.getByTestId('tool-grant')).toHaveCount(0);
  await expect(settingsRow.getByTestId('connector-grant-count')).toHaveText('No always-allowed tools');

  // Revoked: the same call asks again, and nothing ran meanwhile.
  await page.goto(chatUrl);
  await expect(page.getByTestId('approval-card')).toHaveCount(1);
  await ask(page, 'add_note', NOTE);
  const again = await waitingCard(page, 'add_note', 2);
  await expect(page.getByTestId('tool-call')).toHaveCount(1);
  expect(await demoCalls(request, 'add_note')).toBe(before + 2);
  await decline(page, again);
  expect(await demoCalls(request, 'add_note')).toBe(before + 2);
});

test('Allow for this turn: the second call of the turn runs without a card, and the next message asks again', async ({
  page,
  request,
}) => {
  await signUp(page, 'turn', 'Grace Grantor');
  await addDemoConnector(page, ['search_notes']);
  await newChat(page);
  const before = await demoCalls(request, 'search_notes');

  await say(page, 'use search_notes with {"query":"lease"} then use search_notes with {"query":"deed"}');
  const card = await waitingCard(page, 'search_notes', 1);
  await expect(card.getByTestId('approval-arguments')).toHaveText('{\n  "query": "lease"\n}');
  expect(await demoCalls(request, 'search_notes')).toBe(before);
  await allow(card, 'turn');

  await expect(card.getByTestId('approval-status')).toContainText('Allowed for this turn — ran successfully', {
    timeout: REPLY_TIMEOUT,
  });
  await expect(card.getByTestId('tool-origin')).toHaveText(/^You approved at \d\d:\d\d$/);
  // The second search: no card, the turn's grant let it run.
  const block = page.getByTestId('tool-call');
  await expect(block).toHaveCount(1, { timeout: REPLY_TIMEOUT });
  await expect(block).toContainText('"deed"');
  await expect(block.getByTestId('tool-status')).toHaveText('OK', { timeout: REPLY_TIMEOUT });
  await expect(block.getByTestId('tool-origin')).toHaveText('Allowed for this turn');
  await expect(block.getByTestId('tool-origin')).toHaveAttribute('data-origin', 'turn_grant');
  await turnOver(page);
  await expect(page.getByTestId('approval-card')).toHaveCount(1);
  expect(await demoCalls(request, 'search_notes')).toBe(before + 2);
  await snap(page, 'grants-turn-chip');

  // The grant ended with its turn: the next message asks.
  await ask(page, 'search_notes', { query: 'lease' });
  const next = await waitingCard(page, 'search_notes', 2);
  expect(await demoCalls(request, 'search_notes')).toBe(before + 2);
  await decline(page, next);
  expect(await demoCalls(request, 'search_notes')).toBe(before + 2);
});

test('Drift: a tool that changes after "Always allow" asks again, saying it changed, and Settings marks the rule suspended', async ({
  page,
  request,
}) => {
  const admin = demoAdmin(request);
  // The demo server is shared by the run: start from its original tools,
  // and leave them so.
  expect((await admin('/admin/reset')).ok(), 'POST /admin/reset').toBe(true);
  try {
    await signUp(page, 'drift', 'Grace Grantor');
    await addDemoConnector(page, ['drifting_tool']);
    await newChat(page);
    const chatUrl = page.url();
    const args = { matter: 'M-7' };
    const before = await demoCalls(request, 'drifting_tool');

    await ask(page, 'drifting_tool', args);
    const card = await waitingCard(page, 'drifting_tool', 1);
    await card.getByRole('button', { name: 'Always allow this tool' }).click();
    await expect(card.getByTestId('approval-status')).toContainText('Always allowed — ran successfully', {
      timeout: REPLY_TIMEOUT,
    });
    await turnOver(page);
    expect(await demoCalls(request, 'drifting_tool')).toBe(before + 1);

    // The server rewrites the tool's description; a refresh notices.
    expect((await admin('/admin/drift', { field: 'description' })).ok(), 'POST /admin/drift').toBe(true);
    await page.getByTestId('nav-settings').click();
    const row = demoRow(page);
    await row.getByTestId('connector-refresh').click();
    await openReview(row);
    const chip = row.locator('[data-testid="tool-row"][data-tool-name="drifting_tool"]').getByTestId('tool-grant');
    await expect(chip).toHaveAttribute('data-suspended', 'true', { timeout: REPLY_TIMEOUT });

    // Until the user keeps the change, the tool runs only as reviewed: the
    // card says so and offers no grant, only this one call.
    await page.goto(chatUrl);
    await ask(page, 'drifting_tool', args);
    const changed = await waitingCard(page, 'drifting_tool', 2);
    await expect(changed).toContainText('This tool changed since you reviewed it');
    await expect(changed.getByTestId('approval-allow-once')).toBeVisible();
    await expect(changed.getByTestId('approval-allow-turn')).toHaveCount(0);
    await expect(changed.getByTestId('approval-allow-always')).toHaveCount(0);
    expect(await demoCalls(request, 'drifting_tool')).toBe(before + 1);
    await snap(page, 'grants-changed-since-review');
    await page.setViewportSize({ width: 390, height: 844 });
    await snap(page, 'grants-changed-since-review-390');
    await page.setViewportSize({ width: 1280, height: 800 });
    await decline(page, changed);
    await turnOver(page);

    // Kept again in Settings (it is still checked): the rule, pinned to the
    // old descriptor, is suspended, so the call asks with that reason.
    await page.getByTestId('nav-settings').click();
    await openReview(row);
    await row.getByTestId('review-save').click();
    await expect(row.getByTestId('connector-tool-counts')).not.toContainText('changed', {
      timeout: REPLY_TIMEOUT,
    });
    await page.goto(chatUrl);
    await ask(page, 'drifting_tool', args);
    const again = await waitingCard(page, 'drifting_tool', 3);
    await expect(again).toContainText('This tool changed since you allowed it');
    await expect(again.getByTestId('approval-allow-always')).toBeVisible();
    expect(await demoCalls(request, 'drifting_tool')).toBe(before + 1);
    await snap(page, 'grants-drift-asks');
    await decline(page, again);
    expect(await demoCalls(request, 'drifting_tool')).toBe(before + 1);
  } finally {
    await admin('/admin/reset');
  }
});
