// A phone, 390 px wide (issue 12 item 3): the sidebar is a drawer behind
// "Menu", so the page has the whole screen; the approval card with all its
// buttons, Settings and Activity fit with no sideways scroll.
import { expect, test, type Page } from '@playwright/test';
import {
  DEMO_NAME,
  REPLY_TIMEOUT,
  addDemoConnector,
  ask,
  demoCalls,
  expectNoSidewaysScroll,
  guardPages,
  navTo,
  newChat,
  signUp,
  snap,
  turnOver, allow } from './support';

test.setTimeout(120_000);
test.use({ viewport: { width: 390, height: 844 } });

guardPages();

/** Fails unless `testId`'s box lies inside the 390 px wide viewport. */
async function expectInside(page: Page, testId: string) {
  const box = await page.getByTestId(testId).boundingBox();
  expect(box, `${testId} is laid out`).not.toBeNull();
  expect(box!.x, `${testId}'s left edge`).toBeGreaterThanOrEqual(0);
  expect(box!.x + box!.width, `${testId}'s right edge`).toBeLessThanOrEqual(390);
}

test('on a phone the sidebar is a drawer, and the card, Settings and Activity fit the screen', async ({
  page,
  request,
}) => {
  await signUp(page, 'phone', 'Pia Phone');
  const menu = page.getByTestId('menu-button');
  const sidebar = page.getByTestId('sidebar');

  // Closed: the page has the screen; the drawer is neither seen nor tabbed to.
  await expect(menu).toBeVisible();
  await expect(menu).toHaveAttribute('aria-expanded', 'false');
  await expect(sidebar).toBeHidden();
  const main = await page.locator('main').boundingBox();
  expect(main!.width).toBeGreaterThanOrEqual(389);
  expect(main!.y, 'only the top bar above the page').toBeLessThan(80);
  await expectNoSidewaysScroll(page, 'home');
  await snap(page, 'mobile-home');

  // Open with the keyboard: focus goes in; Escape closes and gives it back.
  await menu.focus();
  await page.keyboard.press('Enter');
  await expect(sidebar).toBeVisible();
  await expect(menu).toHaveAttribute('aria-expanded', 'true');
  await expect(sidebar).toBeFocused();
  await page.keyboard.press('Tab');
  await expect(sidebar.getByRole('link', { name: 'Countersign' })).toBeFocused();
  await snap(page, 'mobile-drawer-open');
  await page.keyboard.press('Escape');
  await expect(sidebar).toBeHidden();
  await expect(menu).toBeFocused();
  // The backdrop closes it too.
  await menu.click();
  await expect(sidebar).toBeVisible();
  await page.getByTestId('drawer-backdrop').click({ position: { x: 370, y: 400 } });
  await expect(sidebar).toBeHidden();

  // Going somewhere closes it.
  const row = await addDemoConnector(page, ['search_notes', 'add_note']);
  await expect(page).toHaveURL(/\/settings$/);
  await expect(sidebar).toBeHidden();
  await expectNoSidewaysScroll(page, 'Settings');
  await row.scrollIntoViewIfNeeded();
  await snap(page, 'mobile-settings');

  // The card: every button on screen, nothing sideways.
  await newChat(page);
  await expect(sidebar).toBeHidden();
  const before = await demoCalls(request, 'add_note');
  await ask(page, 'add_note', { title: 'Lease review', body: 'Clause 4.2 needs a second reading.' });
  const card = page.getByTestId('approval-card');
  await expect(card).toHaveAttribute('data-state', 'pending', { timeout: REPLY_TIMEOUT });
  await expect(card.getByTestId('approval-title')).toHaveText(`${DEMO_NAME}: add_note wants to run`);
  for (const button of ['approval-allow-once', 'approval-allow-turn', 'approval-allow-always', 'approval-decline']) {
    await card.getByTestId(button).scrollIntoViewIfNeeded();
    await expect(card.getByTestId(button)).toBeVisible();
    await expectInside(page, button);
  }
  await expectNoSidewaysScroll(page, 'the chat with a card');
  // The conversation keeps most of the screen: the header and the
  // composer stay small.
  const transcript = await page.locator('.transcript').boundingBox();
  expect(transcript!.height, 'the transcript\'s height').toBeGreaterThan(844 * 0.5);
  await card.scrollIntoViewIfNeeded();
  await snap(page, 'mobile-card');
  await allow(card);
  await expect(card.getByTestId('approval-status')).toContainText('Allowed once — ran successfully', {
    timeout: REPLY_TIMEOUT,
  });
  await turnOver(page);
  expect(await demoCalls(request, 'add_note')).toBe(before + 1);
  await expectNoSidewaysScroll(page, 'the chat after the call');
  await snap(page, 'mobile-card-ran');

  // Activity: the call's row, nothing sideways.
  await navTo(page, 'nav-activity');
  await expect(page).toHaveURL(/\/activity$/);
  await expect(sidebar).toBeHidden();
  await expect(page.getByTestId('activity-row').first()).toBeVisible({ timeout: REPLY_TIMEOUT });
  await expectNoSidewaysScroll(page, 'Activity');
  await snap(page, 'mobile-activity');
});
