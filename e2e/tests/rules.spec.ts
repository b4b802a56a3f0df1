// Rules with conditions (DESIGN §5 "Rules", issue 46 item 3), made from a
// card and then deciding calls:
//
// - Under a waiting card, "Make a rule for calls like this" drafts a rule
//   from the call's own arguments (an address suggests "ends with
//   @its-domain", ticked); saved, the server's words for it show, and the
//   card still waits for its own decision.
// - The next call the rule matches runs without a card, its chip naming
//   the rule; a call it does not match still asks.
// - Activity names the rule that let the call run; Settings → Always
//   allowed lists the rule, and deleting it makes the next call ask.
//
// Needs, like approvals.spec.ts, the server started with the demo MCP server
// as an available connector, and COUNTERSIGN_E2E_DEMO_ADMIN pointing at that
// demo server (its call log proves what ran).
import { expect, test, type Locator, type Page } from '@playwright/test';
import {
  DEMO_NAME,
  REPLY_TIMEOUT,
  addDemoConnector,
  allow,
  ask,
  demoCalls,
  everyWay,
  guardPages,
  navTo,
  newChat,
  signUp,
  turnOver,
} from './support';

test.setTimeout(180_000);

guardPages();

/** The `count`-th approval card on the page (1-based), once it waits. */
async function waitingCard(page: Page, count: number): Promise<Locator> {
  const cards = page.getByTestId('approval-card');
  await expect(cards).toHaveCount(count, { timeout: REPLY_TIMEOUT });
  const card = cards.nth(count - 1);
  await expect(card.getByTestId('approval-title')).toHaveText(`${DEMO_NAME}: echo wants to run`);
  await expect(card).toHaveAttribute('data-state', 'pending');
  return card;
}

const RULE = /^Allow \S+: echo when text ends with @firm\.example$/;

test('a rule made from a card decides the next call it matches, names itself, and can be deleted', async ({
  page,
  request,
}) => {
  await signUp(page, 'rules', 'Rita Rulemaker');
  await addDemoConnector(page, ['echo']);
  await newChat(page);
  const chat = page.url();
  const before = await demoCalls(request, 'echo');

  await ask(page, 'echo', { text: 'partner@firm.example' });
  const card = await waitingCard(page, 1);
  await card.getByTestId('approval-make-rule').click();
  const maker = card.getByTestId('rule-maker');
  await expect(maker).toBeVisible();
  // Drafted from the arguments: the address's domain, ticked.
  const text = maker.locator('[data-testid="rule-maker-condition"][data-argument="text"]');
  await expect(text.getByRole('checkbox')).toBeChecked();
  await expect(text.getByRole('combobox')).toHaveValue('ends_with');
  await expect(text.getByRole('textbox')).toHaveValue('@firm.example');
  await expect(maker.getByTestId('rule-maker-allow')).toBeChecked();
  await everyWay(page, 'rules-card-maker', async () => {
    await maker.getByTestId('rule-maker-save').scrollIntoViewIfNeeded();
  });

  await maker.getByTestId('rule-maker-save').click();
  const saved = card.getByTestId('rule-maker-saved');
  await expect(saved).toContainText('Saved: \u201cAllow ');
  await expect(saved).toContainText('echo when text ends with @firm.example\u201d');
  // The rule decides later calls; this card still waits for its own.
  await expect(card).toHaveAttribute('data-state', 'pending');
  expect(await demoCalls(request, 'echo')).toBe(before);
  await allow(card);
  await expect(card.getByTestId('approval-status')).toContainText('ran successfully', { timeout: REPLY_TIMEOUT });
  await turnOver(page);

  // Matched: no card, and the chip names the rule.
  await ask(page, 'echo', { text: 'counsel@firm.example' });
  await turnOver(page);
  await expect(page.getByTestId('approval-card')).toHaveCount(1);
  const block = page.getByTestId('tool-call').last();
  const chip = block.getByTestId('tool-origin');
  await expect(chip).toHaveAttribute('data-origin', 'rule');
  await expect(chip).toHaveText(/^Ran under your rule \u201cAllow \S+: echo when text ends with @firm\.example\u201d$/);
  expect(await demoCalls(request, 'echo')).toBe(before + 2);
  await everyWay(page, 'rules-chip', async () => {
    await chip.scrollIntoViewIfNeeded();
  });

  // Not matched: it asks.
  await ask(page, 'echo', { text: 'someone@elsewhere.example' });
  const other = await waitingCard(page, 2);
  await other.getByTestId('approval-decline').click();
  await turnOver(page);
  expect(await demoCalls(request, 'echo')).toBe(before + 2);

  // Activity names the rule.
  await navTo(page, 'nav-activity');
  const ruled = page.locator('[data-testid="activity-row"][data-decision="rule"]');
  await expect(ruled).toHaveCount(1, { timeout: REPLY_TIMEOUT });
  await expect(ruled.getByTestId('activity-decision')).toHaveText(
    /^Allowed by your rule \u201cAllow \S+: echo when text ends with @firm\.example\u201d$/,
  );

  // Settings lists it; deleted, the next such call asks again.
  await page.goto('/settings/rules');
  const list = page.getByTestId('rules-user');
  const row = list.getByTestId('rule-list-row');
  await expect(row).toHaveCount(1);
  await expect(row.locator('.rule-what')).toHaveText(RULE);
  await expect(row).toHaveAttribute('data-effect', 'allow');
  await everyWay(page, 'rules-settings', async () => {
    await list.scrollIntoViewIfNeeded();
  });
  await row.getByTestId('rule-list-delete').click();
  await expect(list.getByTestId('rule-list-notice')).toContainText('It decides no call from now on.');
  await expect(list.getByTestId('rule-list-empty')).toBeVisible();

  await page.goto(chat);
  await ask(page, 'echo', { text: 'counsel@firm.example' });
  const again = await waitingCard(page, 3);
  await again.getByTestId('approval-decline').click();
  await turnOver(page);
  expect(await demoCalls(request, 'echo')).toBe(before + 2);
});

test('a rule written in Settings without a card: a bad host is refused in words, a good one is listed', async ({
  page,
}) => {
  await signUp(page, 'rules-form');
  await page.goto('/settings/rules');
  const form = page.getByTestId('rule-add-user');
  await form.getByTestId('rule-add-host').fill('https://mail.example.com:443');
  await form.getByTestId('rule-add-tool').fill('send_*');
  await form.getByTestId('rule-add-effect').selectOption('ask');
  await form.getByTestId('rule-add-save').click();
  await expect(form.getByTestId('rule-add-error')).toContainText('is not a connector host');
  await form.getByTestId('rule-add-host').fill('mail.example.com');
  await form.getByTestId('rule-add-within').fill('firm.example, docs.firm.example');
  await form.getByTestId('rule-add-save').click();
  const row = page.getByTestId('rules-user').getByTestId('rule-list-row');
  await expect(row.locator('.rule-what')).toHaveText(
    'Always ask for mail.example.com: send_* when a destination is in firm.example, docs.firm.example',
  );
  await expect(row).toHaveAttribute('data-effect', 'ask');
});
