// A second approver (issue 46 item 4, DESIGN §6.3), in two browsers: the
// administrator asks for a second approval on the demo's `add_note`; a
// user's card says so and offers "Allow once" only; after they allow it
// the card waits for an approver, and the administrator — e-mailed through
// the run's SMTP sink (cargo xtask's aiosmtpd, its log in
// COUNTERSIGN_E2E_MAIL_LOG) — finds it under "Approvals for you" on Home,
// opens the page of its own (the card, where it sends, who asked; not the
// chat) and allows it. The user's card then says it ran, allowed by them
// and by the approver.
//
// The policy is the whole instance's: the last step clears it, so later
// specs see the defaults.
import fs from 'node:fs';
import { expect, test, type Page } from '@playwright/test';
import {
  ADMIN_EMAIL,
  REPLY_TIMEOUT,
  addDemoConnector,
  adminBrowser,
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
const MAIL_LOG = process.env.COUNTERSIGN_E2E_MAIL_LOG ?? '';

/** The mails the sink caught so far, to `to`. */
function mailTo(to: string): { to: string[]; data: string }[] {
  if (!MAIL_LOG || !fs.existsSync(MAIL_LOG)) return [];
  return fs
    .readFileSync(MAIL_LOG, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line))
    .filter((mail) => mail.to.includes(to));
}

async function setSecondApproval(page: Page, tools: string) {
  await navTo(page, 'nav-settings');
  await page.getByTestId('settings-tab-admin').click();
  await expect(page.getByTestId('admin-policy-form')).toBeVisible();
  await page.locator('#policy-second-tools').fill(tools);
  await page.getByTestId('policy-save').click();
  await expect(page.getByTestId('policy-notice')).toHaveText("Saved. It applies from everyone's next tool call.");
}

test('a call the policy gives a second approver waits for the administrator, who is e-mailed and allows it from "Approvals for you"', async ({
  page,
  browser,
}, testInfo) => {
  expect(MAIL_LOG, 'COUNTERSIGN_E2E_MAIL_LOG (cargo xtask sets it)').not.toBe('');
  const requester = await signUp(page, 'second-requester', 'Robin Requester');
  await addDemoConnector(page, ['add_note']);
  await newChat(page);

  const admin = await adminBrowser(browser, testInfo, watch);
  try {
    await setSecondApproval(admin.page, '*/add_note');
    await snap(admin.page, 'second-approval-policy');
    // Nothing waits yet: Home lists nothing, the page says so.
    await admin.page.goto('/approvals');
    await expect(admin.page.getByTestId('approvals-empty')).toBeVisible();

    // The requester's card: why it asks, "Allow once" only.
    const mailsBefore = mailTo(ADMIN_EMAIL).length;
    await ask(page, 'add_note', { title: 'Board minutes', body: 'Draft for the second look' });
    const card = page.getByTestId('approval-card').first();
    await expect(card).toHaveAttribute('data-state', 'pending', { timeout: REPLY_TIMEOUT });
    await expect(card.getByTestId('approval-reason')).toContainText('second approval');
    await expect(card.getByTestId('approval-allow-turn')).toHaveCount(0);
    await expect(card.getByTestId('approval-allow-always')).toHaveCount(0);
    await card.getByTestId('approval-allow-once').click();
    await expect(card).toHaveAttribute('data-state', 'awaiting-second');
    await expect(card.getByTestId('approval-status')).toContainText('Waiting for an approver');
    await expect(card.getByTestId('approval-title')).toContainText('waits for an approver');
    await expect(page.getByTestId('composer-hint')).toContainText('it waits for an approver');
    await snap(page, 'second-approval-card-waiting-1280');

    // The approver's e-mail: the tool and who asked, never the arguments.
    await expect.poll(() => mailTo(ADMIN_EMAIL).length, { timeout: 20_000 }).toBeGreaterThan(mailsBefore);
    const mail = mailTo(ADMIN_EMAIL).at(-1)!.data.replace(/=\r\n/g, '').replace(/\r\n /g, ' ');
    expect(mail).toContain('Approval needed: add_note for');
    expect(mail).toContain(requester);
    expect(mail).not.toContain('Draft for the second look');

    // Home lists it; its own page shows the card.
    await admin.page.goto('/');
    const item = admin.page.getByTestId('approvals-for-you').getByTestId('approvals-item');
    await expect(item).toContainText(`asked by ${requester}`, { timeout: 15_000 });
    await item.getByRole('link').click();
    await expect(admin.page).toHaveURL(/\/approvals$/);
    const second = admin.page.getByTestId('second-approval');
    await expect(second).toHaveCount(1);
    await expect(second).toContainText(`${requester} wants`);
    await expect(second.getByTestId('second-arguments')).toContainText('Draft for the second look');
    await expect(second.getByTestId('second-sends-to')).toContainText('via 127.0.0.1');
    await second.getByTestId('second-allow').click();
    // Its outcome shows until the list, read again every 5 s, drops it.
    await expect(
      second.getByTestId('second-done').or(admin.page.getByTestId('approvals-empty')),
    ).toBeVisible();

    // The requester's card: ran, allowed by both.
    await expect(card).toHaveAttribute('data-state', 'ok', { timeout: REPLY_TIMEOUT });
    await turnOver(page);
    await expect(card.getByTestId('approval-story')).toContainText('then by an approver');
    await snap(page, 'second-approval-card-allowed-1280');

    // A second call, for the pictures of both sides while it waits (it
    // may expire while they are taken: the approver declines it or finds
    // it gone).
    await ask(page, 'add_note', { title: 'Board minutes 2', body: 'Another look' });
    const next = page.getByTestId('approval-card').nth(1);
    await expect(next).toHaveAttribute('data-state', 'pending', { timeout: REPLY_TIMEOUT });
    await next.getByTestId('approval-allow-once').click();
    await expect(next).toHaveAttribute('data-state', 'awaiting-second');
    await admin.page.goto('/approvals');
    await expect(admin.page.getByTestId('second-approval')).toHaveCount(1, { timeout: 15_000 });
    // The list is read again every 5 s; the card stays, and so does the
    // keyboard's place in it.
    const decline = admin.page.getByTestId('second-decline');
    await decline.focus();
    await admin.page.waitForResponse((r) => r.url().endsWith('/api/approvals/inbox'));
    await expect(decline).toBeFocused();
    await everyWay(admin.page, 'second-approval-inbox');
    await everyWay(page, 'second-approval-card-waiting');
    const last = admin.page.getByTestId('second-approval').first();
    if ((await last.count()) > 0 && (await last.getByTestId('second-decline').count()) > 0) {
      await last.getByTestId('second-decline').click();
      await expect(
        last
          .getByTestId('second-done')
          .or(last.getByTestId('second-problem'))
          .or(admin.page.getByTestId('approvals-empty')),
      ).toBeVisible();
    }
    await turnOver(page);
  } finally {
    await setSecondApproval(admin.page, '');
    await admin.context.close();
  }
});
