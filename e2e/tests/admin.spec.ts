// The Admin section (issue 14, DESIGN §5 "Admin policy", §9): the instance's
// administrator — made by the operator's `countersign user create --admin`
// before any spec signs up (cargo xtask passes its one-time password) —
// signs in, must choose a new password first, then finds Settings → Admin:
// the instance's figures, the policy with what each setting does, and the
// accounts. The journey: a user's card offers "Always allow"; the admin
// forbids it; the user's next card no longer does, and their standing rule
// says it is suspended by the policy. The admin disables the user, who is
// signed out at once.
//
// The policy is the whole instance's: whatever happens, the last step puts
// it back as it was, so later specs see the defaults.
import { expect, test, type Page } from '@playwright/test';
import {
  ADMIN_EMAIL,
  PASSPHRASE,
  REPLY_TIMEOUT,
  adminBrowser,
  addDemoConnector,
  ask,
  everyWay,
  guardPages,
  navTo,
  newChat,
  signUp,
  snap,
  turnOver,
} from './support';


test.setTimeout(180_000);

const watch = guardPages();

async function openAdmin(page: Page) {
  await navTo(page, 'nav-settings');
  await page.getByTestId('settings-tab-admin').click();
  await expect(page).toHaveURL(/\/settings\/admin$/);
  await expect(page.getByTestId('admin-policy-form')).toBeVisible();
}

async function setForbidAlways(page: Page, on: boolean) {
  await openAdmin(page);
  const box = page.getByTestId('policy-forbid-always');
  if (on) await box.check();
  else await box.uncheck();
  await page.getByTestId('policy-save').click();
  await expect(page.getByTestId('policy-notice')).toHaveText("Saved. It applies from everyone's next tool call.");
}

test('an admin forbids "Always allow": the user\'s card no longer offers it, their rule is suspended; the admin page lists and disables users', async ({
  page,
  browser,
}, testInfo) => {
  const userEmail = await signUp(page, 'policy-user', 'Pat Policy');
  // Not an admin: no Admin tab, and its address says so.
  await navTo(page, 'nav-settings');
  await expect(page.getByTestId('settings-tab-admin')).toHaveCount(0);
  await page.goto('/settings/admin');
  await expect(page.getByTestId('admin-only')).toBeVisible();

  await addDemoConnector(page, ['add_note']);
  await newChat(page);
  const note = { title: 'Policy', body: 'Always?' };
  await ask(page, 'add_note', note);
  const first = page.getByTestId('approval-card').first();
  await expect(first).toHaveAttribute('data-state', 'pending', { timeout: REPLY_TIMEOUT });
  const always = first.getByTestId('approval-allow-always');
  await expect(always).toBeVisible();
  await always.click();
  await first.getByTestId('approval-always-confirm-yes').click();
  await turnOver(page);

  const admin = await adminBrowser(browser, testInfo, watch);
  try {
    await openAdmin(admin.page);
    // The accounts, the admin's own marked.
    const rows = admin.page.getByTestId('admin-user-row');
    await expect(admin.page.locator(`[data-testid="admin-user-row"][data-email="${ADMIN_EMAIL}"]`)).toContainText('You');
    const userRow = admin.page.locator(`[data-testid="admin-user-row"][data-email="${userEmail}"]`);
    await expect(userRow).toBeVisible();
    await expect(userRow).toHaveAttribute('data-admin', 'false');
    await expect(userRow).toContainText('1 connector ·');
    expect(await rows.count()).toBeGreaterThanOrEqual(2);
    await expect(admin.page.getByTestId('policy-forbid-always')).not.toBeChecked();
    await everyWay(admin.page, 'settings-admin');

    await setForbidAlways(admin.page, true);

    // The user's next call: a card without "Always allow", saying why.
    await ask(page, 'add_note', note);
    const second = page.getByTestId('approval-card').nth(1);
    await expect(second).toHaveAttribute('data-state', 'pending', { timeout: REPLY_TIMEOUT });
    await expect(second.getByTestId('approval-allow-always')).toHaveCount(0);
    await expect(second.getByTestId('approval-allow-once')).toBeVisible();
    await expect(second.getByTestId('approval-allow-turn')).toBeVisible();
    await expect(second.getByTestId('approval-reason')).toContainText('your administrator has turned off');
    await snap(page, 'admin-policy-card-without-always');
    await second.getByTestId('approval-decline').click();
    await turnOver(page);
    // Their rule is kept, and says why it does not apply.
    await navTo(page, 'nav-settings');
    await page.getByTestId('settings-tab-rules').click();
    const rule = page.getByTestId('rule-row');
    await expect(rule).toHaveAttribute('data-suspended', 'true');
    await expect(rule).toContainText('suspended: your administrator turned off');

    // The activity log holds the change, in the admin's own words.
    await navTo(admin.page, 'nav-activity');
    await expect(admin.page.getByTestId('activity-admin-change').first()).toContainText(
      'The policy: Forbid \u201cAlways allow\u201d: off \u2192 on',
    );

    // Disable the user: asked first, then they are signed out at once.
    await openAdmin(admin.page);
    await userRow.getByTestId('admin-user-disable').click();
    const dialog = userRow.getByTestId('admin-user-disable-dialog');
    await expect(dialog).toContainText(`Disable ${userEmail}?`);
    await snap(admin.page, 'admin-disable-confirm');
    await dialog.getByTestId('admin-user-disable-confirm').click();
    await expect(userRow).toHaveAttribute('data-disabled', 'true');
    await expect(userRow).toContainText('Disabled');
    await page.reload();
    await expect(page).toHaveURL(/\/signin/);
    await page.getByTestId('signin-email').fill(userEmail);
    await page.getByTestId('signin-password').fill(PASSPHRASE);
    await page.getByTestId('signin-submit').click();
    await expect(page.getByTestId('signin-error')).toHaveText('This account is disabled. Ask your administrator.');
    await userRow.getByTestId('admin-user-enable').click();
    await expect(userRow).toHaveAttribute('data-disabled', 'false');
  } finally {
    // The policy is the instance's: put it back for the specs after this.
    await setForbidAlways(admin.page, false);
    await admin.context.close();
  }
  await expect(page.getByTestId('signin-submit')).toBeVisible();
});

test('an admin writes a rule for everyone and the firm\'s internal destinations, lists them and takes them back', async ({
  browser,
}, testInfo) => {
  const admin = await adminBrowser(browser, testInfo, watch);
  const page = admin.page;
  try {
    await openAdmin(page);
    await page.getByTestId('policy-internal').fill('firm.example\ndocs.firm.example');
    await page.getByTestId('policy-save').click();
    await expect(page.getByTestId('policy-notice')).toHaveText("Saved. It applies from everyone's next tool call.");
    await page.reload();
    await expect(page.getByTestId('policy-internal')).toHaveValue('firm.example\ndocs.firm.example');

    const rules = page.getByTestId('rules-admin');
    const form = rules.getByTestId('rule-add-admin');
    await form.getByTestId('rule-add-host').fill('*');
    await form.getByTestId('rule-add-tool').fill('wipe_*');
    await form.getByTestId('rule-add-effect').selectOption('deny');
    await form.getByTestId('rule-add-save').click();
    const row = rules.getByTestId('rule-list-row');
    await expect(row).toHaveCount(1);
    await expect(row.locator('.rule-what')).toHaveText('Deny any connector: wipe_*');
    await expect(row).toContainText(`by ${ADMIN_EMAIL}`);
    await rules.scrollIntoViewIfNeeded();
    await everyWay(page, 'settings-admin-rules', async () => {
      await rules.scrollIntoViewIfNeeded();
    });
    await row.getByTestId('rule-list-delete').click();
    await expect(rules.getByTestId('rule-list-empty')).toBeVisible();
    await navTo(page, 'nav-activity');
    await expect(page.getByTestId('activity-admin-change').first()).toContainText(
      'Rules for everyone: Deny any connector: wipe_* \u2192 (none)',
    );
  } finally {
    // The policy is the instance's: put it back for the specs after this.
    await openAdmin(page);
    await page.getByTestId('policy-internal').fill('');
    await page.getByTestId('policy-save').click();
    await expect(page.getByTestId('policy-notice')).toBeVisible();
    await admin.context.close();
  }
});

test("an admin's Activity shows whose calls wait, never their arguments, and the read is in the admin's log", async ({
  page,
  browser,
}, testInfo) => {
  const userEmail = await signUp(page, 'waiting-user', 'Wes Waiting');
  await addDemoConnector(page, ['add_note']);
  await newChat(page);
  const secret = 'Privileged: settlement floor is 2.4 million';
  await ask(page, 'add_note', { title: 'Floor', body: secret });
  const card = page.getByTestId('approval-card');
  await expect(card).toHaveAttribute('data-state', 'pending', { timeout: REPLY_TIMEOUT });

  const admin = await adminBrowser(browser, testInfo, watch);
  try {
    await navTo(admin.page, 'nav-activity');
    await admin.page.getByTestId('activity-scope').selectOption({ label: userEmail });
    await admin.page.getByTestId('activity-apply').click();
    const waiting = admin.page.getByTestId('activity-waiting');
    await expect(waiting.getByRole('heading')).toHaveText('Waiting for a decision');
    const call = waiting.getByTestId('activity-waiting-call');
    await expect(call).toHaveCount(1);
    await expect(call).toContainText(userEmail);
    await expect(call).toContainText('add_note');
    await expect(call).toContainText(/waiting since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d/);
    // Only its account can decide it, and its arguments are theirs.
    await expect(call.getByRole('link')).toHaveCount(0);
    await expect(admin.page.locator('body')).not.toContainText('settlement floor');
    await everyWay(admin.page, 'activity-admin-waiting');

    // The admin's own log says they read it.
    await admin.page.getByTestId('activity-scope').selectOption({ label: 'Mine' });
    await admin.page.getByTestId('activity-apply').click();
    await expect(
      admin.page.getByTestId('activity-admin-change').filter({ hasText: 'Read the calls waiting for' }).first(),
    ).toContainText(`Read the calls waiting for the account ${userEmail}`);
  } finally {
    await admin.context.close();
  }
  await card.getByTestId('approval-decline').click();
  await expect(card).toHaveAttribute('data-state', 'declined', { timeout: REPLY_TIMEOUT });
});
