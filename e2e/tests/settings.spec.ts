// Settings as sections, each at its own address (issue 12 item 10):
// Connectors, Models & keys, Security, Always allowed; a connector's "N
// always-allowed tools" leads to the list with Revoke; an Activity row
// leads to its chat.
import { expect, test } from '@playwright/test';
import {
  DEMO_NAME,
  REPLY_TIMEOUT,
  addDemoConnector,
  ask,
  demoRow,
  guardPages,
  newChat,
  signUp,
  snap,
  turnOver, allow } from './support';

test.setTimeout(120_000);

guardPages();

const SECTIONS = [
  ['settings-tab-connectors', /\/settings$/, 'connectors-section', 'connectors'],
  ['settings-tab-models', /\/settings\/models$/, 'key-status-openai', 'models'],
  ['settings-tab-security', /\/settings\/security$/, 'security-section', 'security'],
  ['settings-tab-rules', /\/settings\/rules$/, 'rules-section', 'rules'],
] as const;

test('each Settings section has its own address; the rule count leads to Revoke, and an Activity row to its chat', async ({
  page,
}) => {
  await signUp(page, 'sections', 'Sid Sections');
  await page.getByTestId('nav-settings').click();
  for (const [tab, url, part, name] of SECTIONS) {
    await page.getByTestId(tab).click();
    await expect(page).toHaveURL(url);
    await expect(page.getByTestId(tab)).toHaveAttribute('aria-current', 'page');
    await expect(page.getByTestId(part)).toBeVisible();
    await snap(page, `settings-${name}`);
    await page.setViewportSize({ width: 390, height: 844 });
    await snap(page, `settings-${name}-390`);
    await page.setViewportSize({ width: 1280, height: 720 });
    // The address alone opens it (a reload, a bookmark).
    await page.reload();
    await expect(page.getByTestId(part)).toBeVisible();
  }
  await expect(page.getByTestId('rules-empty')).toHaveText('No always-allowed tools.');

  // An always-allow rule, made from a card.
  await addDemoConnector(page, ['add_note']);
  await newChat(page);
  const chatUrl = page.url();
  await ask(page, 'add_note', { title: 'Rule', body: 'made here' });
  const card = page.getByTestId('approval-card');
  await expect(card).toHaveAttribute('data-state', 'pending', { timeout: REPLY_TIMEOUT });
  await allow(card, 'always');
  await card.getByTestId('approval-always-confirm-yes').click();
  await expect(card.getByTestId('approval-status')).toContainText('Always allowed — ran successfully', {
    timeout: REPLY_TIMEOUT,
  });
  await turnOver(page);

  // The connector's count is a link to the list; Revoke there.
  await page.getByTestId('nav-settings').click();
  const count = demoRow(page).getByTestId('connector-grant-count');
  await expect(count).toHaveText('1 always-allowed tool');
  await count.click();
  await expect(page).toHaveURL(/\/settings\/rules$/);
  const rule = page.locator('[data-testid="rule-row"][data-tool-name="add_note"]');
  await expect(rule).toContainText(`${DEMO_NAME}: add_note`);
  await expect(rule).toHaveAttribute('data-suspended', 'false');
  await snap(page, 'settings-rules-one');
  await rule.getByRole('button', { name: `Revoke the always-allow rule for add_note on ${DEMO_NAME}` }).click();
  await expect(page.getByTestId('rules-notice')).toHaveText(
    `Revoked. The next call to add_note on ${DEMO_NAME} asks for your approval again.`,
  );
  await expect(page.getByTestId('rules-empty')).toBeVisible();

  // Activity: the call's row leads back to its chat.
  await page.getByTestId('settings-activity-link').click();
  await expect(page).toHaveURL(/\/activity$/);
  await page.getByTestId('activity-row').first().getByTestId('activity-chat-link').click();
  await expect(page).toHaveURL(chatUrl);
  await expect(page.getByTestId('approval-card')).toHaveCount(1);
});
