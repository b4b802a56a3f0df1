// Journey: a person adds a connector that uses OAuth (DESIGN §2 "Connector
// authorization", §9), is told to sign in when they test it, signs in on the
// authorization server's own page, comes back to Settings signed in, tests
// the connector, keeps a tool, and approves a call that runs with the token;
// then signs out, and Test asks for a sign-in again. Also: an error the
// sign-in came back with is shown once, and the address is cleaned.
//
// Needs a demo MCP server in OAuth mode (`countersign-demo-mcp --oauth`:
// its /mcp needs a token from its own loopback authorization server, whose
// /authorize page has one "Allow" button), its address on the server's
// COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS, and its root given to this process
// as COUNTERSIGN_E2E_OAUTH_DEMO. `cargo xtask e2e` does all three.
import { expect, test, type APIRequestContext, type Locator, type Page } from '@playwright/test';
import {
  OAUTH_DEMO,
  REPLY_TIMEOUT,
  ask,
  demoCalls,
  everyWay,
  guardPages,
  newChat,
  signUp,
  snap,
  turnOver, allow, openReview } from './support';

const NAME = 'Demo notes (OAuth)';

test.setTimeout(120_000);

guardPages();

/** The OAuth demo's own counters and the Authorization headers its /mcp saw. */
async function oauthAdmin(request: APIRequestContext): Promise<{ counters: Record<string, number>; seen: string[] }> {
  const response = await request.get(`${OAUTH_DEMO}/admin/oauth`);
  expect(response.ok(), 'GET /admin/oauth').toBe(true);
  return response.json();
}

/** Screenshots of Settings with `part` in view, at 1280 px and 390 px wide. */
async function snapBothWidths(page: Page, part: Locator, name: string) {
  await part.scrollIntoViewIfNeeded();
  await snap(page, name);
  await page.setViewportSize({ width: 390, height: 844 });
  await part.scrollIntoViewIfNeeded();
  await snap(page, `${name}-390`);
  await page.setViewportSize({ width: 1280, height: 720 });
}

test('a user signs in to an OAuth connector on its own page, and a call approved in a chat runs with the token', async ({
  page,
  request,
}) => {
  expect(OAUTH_DEMO, 'COUNTERSIGN_E2E_OAUTH_DEMO must point at the demo MCP server in OAuth mode').toBeTruthy();
  await signUp(page, 'oauth', 'Olga Auth');
  await page.getByTestId('nav-settings').click();
  await expect(page).toHaveURL(/\/settings$/);
  const section = page.getByTestId('connectors-section');

  // Add it with "OAuth (sign in)"; the client fields are optional and left
  // empty, so Countersign registers itself.
  await section.getByTestId('connector-add-name').fill(NAME);
  await section.getByTestId('connector-add-url').fill(`${OAUTH_DEMO}/mcp`);
  await section.getByTestId('connector-add-auth').selectOption('oauth');
  await expect(section.getByLabel('Client ID')).toBeVisible();
  await expect(section.getByLabel('Client secret')).toHaveAttribute('type', 'password');
  await expect(section.getByLabel('Scopes')).toBeVisible();
  await expect(section.getByText('Leave these empty and Countersign registers itself with the server.', { exact: false })).toBeVisible();
  await snapBothWidths(page, section.getByTestId('connector-add-oauth-client'), 'oauth-add-form');
  await section.getByTestId('connector-add-submit').click();
  await expect(section.getByTestId('connector-add-notice')).toHaveText(`Added “${NAME}”. Sign in to it, then review its tools.`);

  const row = section.locator(`[data-testid="connector-row"][data-connector-name="${NAME}"]`);
  await expect(row.getByTestId('connector-auth')).toHaveText('OAuth sign-in');
  await expect(row.getByTestId('connector-sign-in-state')).toHaveAttribute('data-oauth-status', 'needs_sign_in');
  await expect(row.getByTestId('connector-oauth-state')).toHaveText('Not signed in');

  // Test before signing in: the server's answer, beside the Sign in button,
  // which is where the keyboard goes.
  await row.getByTestId('connector-test').click();
  await expect(row.getByTestId('connector-status')).toHaveAttribute('data-status', 'error');
  const signIn = row.getByTestId('connector-sign-in');
  await expect(row.getByTestId('connector-sign-in-state').getByTestId('connector-last-error')).toHaveText(
    'Sign in to this connector again.',
  );
  await expect(row.getByTestId('connector-last-error')).toHaveCount(1);
  await expect(row.getByTestId('connector-error')).toHaveCount(0);
  await expect(signIn).toBeFocused();
  await expect(signIn).toHaveAccessibleDescription('Sign in to this connector again.');
  await snapBothWidths(page, row, 'oauth-settings-signed-out');
  // Axe: no violation, light and dark, wide and narrow (issue 12).
  await everyWay(page, 'settings-oauth-signed-out', () => row.scrollIntoViewIfNeeded());
  await signIn.focus();

  // Sign in with the keyboard: the whole window goes to the authorization
  // server's page; Allow sends it back to Settings.
  const before = await oauthAdmin(request);
  await page.keyboard.press('Enter');
  await page.waitForURL((url) => url.href.startsWith(`${OAUTH_DEMO}/authorize?`));
  await expect(page.getByRole('heading', { name: 'Sign in to Demo notes' })).toBeVisible();
  await page.getByRole('button', { name: 'Allow' }).click();

  // Back on Settings: the status line, once; the address without its query.
  await expect(page).toHaveURL(/\/settings$/);
  await expect(page.getByTestId('oauth-return')).toHaveText(`Signed in to ${NAME}.`);
  await expect(row.getByTestId('connector-sign-in-state')).toHaveAttribute('data-oauth-status', 'connected');
  await expect(row.getByTestId('connector-oauth-state')).toHaveText('Signed in with 127.0.0.1');
  await expect(row.getByTestId('connector-sign-out')).toHaveText('Sign out');
  const after = await oauthAdmin(request);
  expect(after.counters.tokens, 'one code exchanged for a token').toBe(before.counters.tokens + 1);

  // Test, then keep the read-only search tool.
  await row.getByTestId('connector-test').click();
  await expect(row.getByTestId('connector-status')).toHaveAttribute('data-status', 'ok');
  await expect(row.getByTestId('connector-last-error')).toHaveCount(0);
  await openReview(row);
  await row.locator('[data-testid="tool-row"][data-tool-name="search_notes"]').getByTestId('tool-keep').check();
  await row.getByTestId('review-save').click();
  await expect(row.getByTestId('connector-tool-counts')).toContainText('1 kept');
  await row.getByTestId('connector-review').click();
  await snapBothWidths(page, row, 'oauth-settings-signed-in');
  await everyWay(page, 'settings-oauth-signed-in', () => row.scrollIntoViewIfNeeded());

  // A reload does not say "Signed in" again.
  await page.reload();
  await expect(row.getByTestId('connector-oauth-state')).toHaveText('Signed in with 127.0.0.1');
  await expect(page.getByTestId('oauth-return')).toHaveCount(0);

  // In a chat, the offline model proposes the call; it waits for approval,
  // then runs at the OAuth server with a bearer token.
  await newChat(page);
  const calls = await demoCalls(request, 'search_notes', OAUTH_DEMO);
  await ask(page, 'search_notes', { query: 'lease' });
  const card = page.getByTestId('approval-card');
  await expect(card).toHaveCount(1, { timeout: REPLY_TIMEOUT });
  await expect(card.getByTestId('approval-title')).toHaveText(`${NAME}: search_notes wants to run`);
  await expect(card).toHaveAttribute('data-state', 'pending');
  expect(await demoCalls(request, 'search_notes', OAUTH_DEMO), 'nothing runs before the decision').toBe(calls);
  await allow(card);
  await expect(card.getByTestId('approval-status')).toContainText('Allowed once — ran successfully', {
    timeout: REPLY_TIMEOUT,
  });
  await expect(page.getByTestId('message-assistant')).toContainText('lease', { timeout: REPLY_TIMEOUT });
  await turnOver(page);
  expect(await demoCalls(request, 'search_notes', OAUTH_DEMO)).toBe(calls + 1);
  const seen = (await oauthAdmin(request)).seen;
  expect(seen.length, '/mcp saw Authorization headers').toBeGreaterThan(0);
  expect(seen[seen.length - 1]).toMatch(/^Bearer \S+$/);

  // Sign out: revoked at the authorization server, and Test asks for a
  // sign-in again.
  await page.getByTestId('nav-settings').click();
  const signOut = row.getByTestId('connector-sign-out');
  await signOut.click();
  await expect(row.getByTestId('connector-oauth-state')).toHaveText('Not signed in');
  await expect(row.getByTestId('connector-sign-in')).toHaveText('Sign in');
  await expect(row.getByTestId('connector-sign-in')).toBeFocused();
  expect((await oauthAdmin(request)).counters.revoked).toBe(after.counters.revoked + 1);
  await row.getByTestId('connector-test').click();
  await expect(row.getByTestId('connector-last-error')).toHaveText('Sign in to this connector again.');

  // A call made while signed out fails with a way back in — one button,
  // nothing retried by itself — and the button goes to the sign-in page.
  await newChat(page);
  const callsBefore = await demoCalls(request, 'search_notes', OAUTH_DEMO);
  await ask(page, 'search_notes', { query: 'lease' });
  const signedOutCard = page.getByTestId('approval-card');
  await expect(signedOutCard).toHaveCount(1, { timeout: REPLY_TIMEOUT });
  await allow(signedOutCard);
  const again = signedOutCard.getByTestId('tool-sign-in-again');
  await expect(again).toHaveText(`Sign in to ${NAME} again`, { timeout: REPLY_TIMEOUT });
  await expect(signedOutCard.getByTestId('approval-tool-error')).toHaveText('Sign in to this connector again.');
  await turnOver(page);
  expect(await demoCalls(request, 'search_notes', OAUTH_DEMO), 'nothing ran signed out').toBe(callsBefore);
  await snapBothWidths(page, signedOutCard, 'oauth-chat-sign-in-again');
  await everyWay(page, 'chat-sign-in-again', () => signedOutCard.scrollIntoViewIfNeeded());
  await again.click();
  await page.waitForURL((url) => url.href.startsWith(`${OAUTH_DEMO}/authorize?`));
});

test('a sign-in that came back with an error says so once, and the address loses the query', async ({ page }) => {
  await signUp(page, 'oauth-error', 'Olga Auth');
  await page.goto('/settings?oauth_error=The%20authorization%20server%20said%3A%20access_denied');
  const line = page.getByTestId('oauth-return-error');
  await expect(line).toHaveText('Connector sign-in failed. The authorization server said: access_denied');
  await expect(line).toHaveAttribute('role', 'alert');
  await expect(page).toHaveURL(/\/settings$/);
  await page.reload();
  await expect(page.getByTestId('connectors-section')).toBeVisible();
  await expect(page.getByTestId('oauth-return-error')).toHaveCount(0);
});
