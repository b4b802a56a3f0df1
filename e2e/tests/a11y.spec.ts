// Every page (each Settings section too), at 1280 and 390 px wide, in the light and the dark colour
// scheme (issue 12 items 11 and 12): axe-core reports no violation —
// contrast of every text at 4.5:1 or more among its rules — and each
// combination is photographed into e2e/artifacts/ to be looked at. The
// input card, an OAuth connector and the step-up dialog get the same
// check inside their own journeys (elicitation, oauth and security specs).
import { expect, test } from '@playwright/test';
import {
  REPLY_TIMEOUT,
  SCHEMES,
  addDemoConnector,
  ask,
  everyWay,
  expectNoViolations,
  guardPages,
  newChat,
  signUp,
  snap, allow } from './support';

test.setTimeout(240_000);

guardPages();

test('the signed-out pages have no accessibility violations, light and dark, wide and narrow', async ({ page }) => {
  await page.goto('/signin');
  await expect(page.getByTestId('signin-submit')).toBeVisible();
  await everyWay(page, 'signin');
  await page.goto('/signup');
  await expect(page.getByTestId('signup-submit')).toBeVisible();
  await everyWay(page, 'signup');
});

test('the signed-in pages have no accessibility violations, light and dark, wide and narrow', async ({ page }) => {
  await signUp(page, 'a11y', 'Alex Axe');
  await everyWay(page, 'home');
  await addDemoConnector(page, ['search_notes', 'add_note']);
  await everyWay(page, 'settings');
  for (const section of ['models', 'security', 'rules']) {
    await page.goto(`/settings/${section}`);
    await expect(page.getByTestId(`settings-tab-${section}`)).toHaveAttribute('aria-current', 'page');
    await everyWay(page, `settings-${section}`);
  }
  await newChat(page);
  await everyWay(page, 'chat-empty');
  await ask(page, 'add_note', { title: 'Lease', body: 'Check clause 4.' });
  const card = page.getByTestId('approval-card');
  await expect(card).toHaveAttribute('data-state', 'pending', { timeout: REPLY_TIMEOUT });
  await everyWay(page, 'chat-card', () => card.scrollIntoViewIfNeeded());
  // The "Always allow" question of a risky card, and the drawer on a phone.
  await allow(card, 'always');
  const confirm = card.getByTestId('approval-always-confirm');
  await expect(confirm).toBeVisible();
  await everyWay(page, 'chat-always-confirm', () => confirm.scrollIntoViewIfNeeded());
  await card.getByTestId('approval-always-confirm-cancel').click();
  for (const scheme of SCHEMES) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByTestId('menu-button').click();
    await expect(page.getByTestId('sidebar')).toBeVisible();
    await expectNoViolations(page, `the drawer, ${scheme}`);
    await snap(page, `all-drawer-390-${scheme}`);
    await page.keyboard.press('Escape');
    await expect(page.getByTestId('sidebar')).toBeHidden();
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 1280, height: 800 });
  await allow(card);
  await expect(card.getByTestId('approval-status')).toContainText('ran successfully', { timeout: REPLY_TIMEOUT });
  await expect(page.getByTestId('stop-turn')).toHaveCount(0, { timeout: REPLY_TIMEOUT });
  await everyWay(page, 'chat-ran');
  await page.goto('/activity');
  await expect(page.getByTestId('activity-row').first()).toBeVisible({ timeout: REPLY_TIMEOUT });
  await everyWay(page, 'activity');
  await page.goto('/no-such-page');
  await everyWay(page, 'not-found');
});

test('the keyboard and screen-reader paths: skip link, focus after New chat and a failed sign-in, errors tied to fields, a new card announced', async ({
  page,
}) => {
  // A failed sign-in: focus on the reason, and the fields described by it.
  await page.goto('/signin');
  await page.getByTestId('signin-email').fill('nobody@example.com');
  await page.getByTestId('signin-password').fill('not the password at all');
  await page.getByTestId('signin-submit').click();
  const error = page.getByTestId('signin-error');
  await expect(error).toBeVisible();
  await expect(error).toBeFocused();
  for (const field of ['signin-email', 'signin-password']) {
    await expect(page.getByTestId(field)).toHaveAttribute('aria-invalid', 'true');
    await expect(page.getByTestId(field)).toHaveAccessibleDescription(await error.innerText());
  }

  // New chat: the keyboard lands in the composer.
  await signUp(page, 'keys', 'Kim Keys');
  await addDemoConnector(page, ['add_note']);
  await newChat(page);
  await expect(page.getByTestId('composer-input')).toBeFocused();

  // The skip link is the first stop, and goes to the message box.
  // (A reload starts the tab order from the top, and focuses nothing.)
  await page.reload();
  await expect(page.getByTestId('composer-input')).toBeVisible();
  await expect(page.getByTestId('composer-input')).not.toBeFocused();
  await page.keyboard.press('Tab');
  const skip = page.getByTestId('skip-link');
  await expect(skip).toBeFocused();
  await expect(skip).toHaveText('Skip to the message box');
  await expect(skip).toBeInViewport();
  await snap(page, 'skip-link');
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('composer-input')).toBeFocused();

  // A new card is announced by its connector and tool, then no more.
  await ask(page, 'add_note', { title: 'Lease', body: 'Check clause 4.' });
  const announcer = page.getByTestId('card-announcer');
  await expect(announcer).toHaveAttribute('role', 'status');
  await expect(announcer).toHaveText('Countersign demo: add_note wants to run and waits for your decision.', {
    timeout: REPLY_TIMEOUT,
  });
  await page.getByTestId('approval-card').getByTestId('approval-decline').click();
  await expect(announcer).toHaveText('');
});
