// The first screen says what to do first (issue 12 item 9): add the demo
// connector in one click and keep a tool right there, then try the phrase
// the offline model understands — a button that opens a new chat with it
// in the composer, unsent.
import { expect, test } from '@playwright/test';
import { DEMO_NAME, REPLY_TIMEOUT, demoCalls, guardPages, signUp, snap } from './support';

test.setTimeout(120_000);

guardPages();

const PHRASE = 'use search_notes with {"query": "lease"}';

test('a new user adds the demo connector from the home page, keeps a tool, and tries the phrase', async ({
  page,
  request,
}) => {
  await signUp(page, 'onboard', 'Nora Newcomer');
  const steps = page.getByTestId('onboarding');
  await expect(steps.getByRole('heading', { name: 'Get started' })).toBeVisible();
  const connectorStep = page.getByTestId('step-connector');
  await expect(connectorStep).toHaveAttribute('data-done', 'false');
  const add = page.getByTestId('onboarding-add-demo');
  await expect(add).toHaveText(`Add ${DEMO_NAME}`);
  await snap(page, 'onboarding-first');
  await page.setViewportSize({ width: 390, height: 844 });
  await snap(page, 'onboarding-first-390');
  await page.setViewportSize({ width: 1280, height: 720 });

  // One click adds and tests it; its tools are there to keep.
  await add.click();
  await expect(page.getByTestId('step-connector-review')).toContainText(`Added ${DEMO_NAME}.`, {
    timeout: REPLY_TIMEOUT,
  });
  const search = connectorStep.locator('[data-testid="tool-row"][data-tool-name="search_notes"]');
  await search.getByTestId('tool-keep').check();
  await connectorStep.getByTestId('review-save').click();
  await expect(page.getByTestId('step-connector-done')).toContainText(`Done: ${DEMO_NAME} offers 1 tool to the assistant.`);
  await expect(connectorStep).toHaveAttribute('data-done', 'true');
  await snap(page, 'onboarding-done');

  // The phrase: a new chat with it in the composer, and nothing sent.
  const before = await demoCalls(request, 'search_notes');
  const tryIt = page.getByTestId('try-phrase');
  await expect(tryIt).toHaveText(PHRASE);
  await tryIt.click();
  await expect(page).toHaveURL(/\/chats\/[0-9a-f-]{36}$/);
  await expect(page.getByTestId('composer-input')).toHaveValue(PHRASE);
  await expect(page.getByTestId('message-user')).toHaveCount(0);
  await snap(page, 'onboarding-phrase-in-composer');
  // Only this chat got it: another new chat starts empty.
  await page.getByTestId('new-chat').click();
  await expect(page.getByTestId('composer-input')).toHaveValue('');
  await page.goBack();
  await expect(page.getByTestId('composer-input')).toHaveValue('');

  // Sent by hand, it proposes the call, which waits for approval.
  await page.getByTestId('composer-input').fill(PHRASE);
  await page.getByTestId('composer-send').click();
  const card = page.getByTestId('approval-card');
  await expect(card.getByTestId('approval-title')).toHaveText(`${DEMO_NAME}: search_notes wants to run`, {
    timeout: REPLY_TIMEOUT,
  });
  expect(await demoCalls(request, 'search_notes')).toBe(before);
  await card.getByTestId('approval-decline').click();
  await expect(card.getByTestId('approval-status')).toHaveText('Declined', { timeout: REPLY_TIMEOUT });
});
