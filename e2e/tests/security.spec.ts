// Journeys through Settings → Security and the activity log (DESIGN §4, §5,
// §9):
//
// - Two-factor sign-in: set it up (after typing the current password; a
//   wrong one is refused) from the QR code's secret (this test is the
//   authenticator app: RFC 6238 codes computed here), see the ten recovery
//   codes once, sign out; signing in then asks for the code, refuses a wrong
//   one, takes the right one (and, another time, a recovery code); a
//   recovery code turns it off again.
// - Activity: an approved call to the demo connector is listed with its
//   connector, tool, arguments digest (never the arguments), decision and
//   "OK".
// - A connector's credentials are replaced from Settings → Connectors
//   ("Change credentials"), never shown back.
// - Sessions: signed in from two browsers, the list shows both, this one
//   marked; "Sign out other sessions" signs the other one out.
// - Password: "Change password" (current, new, confirmation) signs the other
//   browser out and keeps this one; then only the new password signs in.
// - Step-up: a browser signed in before two-factor sign-in was set up (in
//   the other browser) is asked for a code before it saves a provider key;
//   a wrong code is refused in the dialog, the right one lets the save go
//   through. (Setting up two-factor sign-in, and signing in with a code,
//   count as a step-up for ten minutes: only a session from before has to
//   step up.) The API tests (backend/tests/api/mfa.rs) cover the server's
//   side of it, the host tests (frontend/src/step_up.rs) the retry rule.
//
// Needs, like approvals.spec.ts, the server started with a secret key
// (COUNTERSIGN_SECRET_KEY) and the demo MCP server as an available connector.
import { createHash, createHmac } from 'node:crypto';
import { expect, test, type Browser, type Page, type TestInfo } from '@playwright/test';
import {
  PASSPHRASE,
  DEMO_NAME,
  REPLY_TIMEOUT,
  guardPages,
  snap,
  signUp,
  signOut,
  demoRow,
  addDemoConnector,
  newChat,
  ask,
  everyWay, allow } from './support';

const SEARCH = { query: 'lease' };

test.setTimeout(120_000);

const watch = guardPages();

// ---- The authenticator app (RFC 6238: HMAC-SHA1, 30 s steps, 6 digits).

function base32Decode(text: string): Buffer {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let buffer = 0;
  let bits = 0;
  const out: number[] = [];
  for (const c of text.replace(/[\s=]/g, '').toUpperCase()) {
    const value = alphabet.indexOf(c);
    if (value < 0) throw new Error(`not base32: ${c}`);
    buffer = ((buffer << 5) | value) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out.push((buffer >> bits) & 0xff);
    }
  }
  return Buffer.from(out);
}

function codeAt(secret: Buffer, step: number): string {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const digest = createHmac('sha1', secret).update(counter).digest();
  const offset = digest[19] & 0x0f;
  const binary = (digest.readUInt32BE(offset) & 0x7fffffff) % 1_000_000;
  return binary.toString().padStart(6, '0');
}

const nowStep = () => Math.floor(Date.now() / 1000 / 30);

/**
 * Hands out codes like a phone would, each of a step the server has not
 * seen: the server takes the current step ±1 and never the same step twice.
 */
class Authenticator {
  private last = -Infinity;

  constructor(private readonly secret: Buffer) {}

  async next(): Promise<string> {
    let step = Math.max(nowStep(), this.last + 1);
    // Ahead of the server's window: wait for the clock to get there.
    await expect
      .poll(() => step <= nowStep() + 1, { timeout: 65_000, intervals: [1_000] })
      .toBe(true);
    step = Math.max(nowStep(), this.last + 1);
    this.last = step;
    return codeAt(this.secret, step);
  }
}

// The RFC's own vector (SHA-1, T = 59 s → step 1): the code above is the
// server's algorithm before anything depends on it.
test('the test authenticator computes RFC 6238 codes', () => {
  const secret = Buffer.from('12345678901234567890');
  expect(codeAt(secret, 1)).toBe('287082');
  expect(codeAt(secret, 37037036)).toBe('081804');
  expect(base32Decode('GEZDGNBVGY3TQOJQ').toString()).toBe('1234567890');
});

// ---- Journeys.

/** Email and password; returns once the server asked for the second factor. */
async function signInAskingForCode(page: Page, email: string) {
  await page.getByTestId('signin-email').fill(email);
  await page.getByTestId('signin-password').fill(PASSPHRASE);
  await page.getByTestId('signin-submit').click();
  const code = page.getByTestId('signin-code');
  await expect(code).toBeVisible();
  await expect(code).toBeFocused();
  await expect(page.getByLabel('Two-factor code')).toBeVisible();
  await expect(page.getByTestId('signin-error')).toHaveCount(0);
  await expect(page).toHaveURL(/\/signin$/);
}

async function openSecurity(page: Page) {
  await page.getByTestId('nav-settings').click();
  await page.getByTestId('settings-tab-security').click();
  await expect(page).toHaveURL(/\/settings\/security$/);
  const section = page.getByTestId('security-section');
  await expect(section).toBeVisible();
  return section;
}

test('two-factor sign-in: set up with a code, recovery codes shown once, then sign-in asks for the code', async ({
  page,
}) => {
  const email = await signUp(page, 'mfa', 'Sam Secure');
  const security = await openSecurity(page);
  const mfa = security.getByTestId('mfa');
  await expect(mfa.getByTestId('mfa-status')).toHaveText('Off');

  // Set up asks for the current password first; a wrong one starts nothing.
  await mfa.getByTestId('mfa-enroll-password').fill('not my password at all');
  await mfa.getByTestId('mfa-enroll').click();
  await expect(mfa.getByTestId('mfa-error')).toHaveText('Wrong password.');
  await expect(mfa.getByTestId('mfa-qr')).toHaveCount(0);
  await mfa.getByLabel('To set it up, enter your current password').fill(PASSPHRASE);
  // Set up: the QR code (an image the CSP lets load) and the secret.
  await mfa.getByTestId('mfa-enroll').click();
  const qr = mfa.getByTestId('mfa-qr');
  await expect(qr).toBeVisible();
  await expect(qr).toHaveAttribute('src', /^data:image\/svg\+xml;base64,/);
  await expect(qr).toHaveAttribute('alt', /QR code/);
  await expect
    .poll(() => qr.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0))
    .toBe(true);
  const secretText = (await mfa.getByTestId('mfa-secret').textContent())?.trim() ?? '';
  expect(secretText).toMatch(/^[A-Z2-7]{16,}=*$/);
  const phone = new Authenticator(base32Decode(secretText));
  await snap(page, 'security-mfa-enrol');

  // A wrong code turns nothing on.
  await mfa.getByTestId('mfa-confirm-code').fill('000000');
  await mfa.getByTestId('mfa-confirm-submit').click();
  await expect(mfa.getByTestId('mfa-confirm-error')).toContainText('not valid');
  await expect(mfa.getByTestId('mfa-status')).toHaveText('Off');

  // The right one, with Enter.
  await mfa.getByTestId('mfa-confirm-code').fill(await phone.next());
  await mfa.getByTestId('mfa-confirm-code').press('Enter');
  const codes = mfa.getByTestId('mfa-recovery-code');
  await expect(codes).toHaveCount(10);
  await expect(mfa.getByTestId('mfa-status')).toHaveText('On');
  const recovery = (await codes.allTextContents()).map((c) => c.trim());
  expect(new Set(recovery).size).toBe(10);
  await snap(page, 'security-mfa-recovery-codes');
  // "Done" waits for "I saved them".
  await expect(mfa.getByTestId('mfa-codes-done')).toBeDisabled();
  await mfa.getByTestId('mfa-codes-saved').check();
  await mfa.getByTestId('mfa-codes-done').click();
  // Shown once: gone now, and not back after a reload.
  await expect(codes).toHaveCount(0);
  await expect(mfa.getByTestId('mfa-disable-code')).toBeVisible();
  await page.reload();
  await expect(page.getByTestId('mfa-status')).toHaveText('On');
  await expect(page.getByTestId('mfa-recovery-code')).toHaveCount(0);

  // Sign-in now asks for the code; a wrong one is refused.
  await signOut(page);
  await signInAskingForCode(page, email);
  await page.getByTestId('signin-code').fill('000000');
  await page.getByTestId('signin-submit').click();
  await expect(page.getByTestId('signin-error')).toContainText('not valid');
  await expect(page).toHaveURL(/\/signin$/);
  await page.getByTestId('signin-code').fill(await phone.next());
  await page.getByTestId('signin-code').press('Enter');
  await expect(page.getByTestId('shell')).toBeVisible();
  await expect(page.getByTestId('user-email')).toHaveText(email);

  // A recovery code signs in too, once.
  await signOut(page);
  await signInAskingForCode(page, email);
  await page.getByTestId('signin-code').fill(recovery[0]);
  await page.getByTestId('signin-submit').click();
  await expect(page.getByTestId('shell')).toBeVisible();

  // And another one turns two-factor sign-in off.
  const again = await openSecurity(page);
  await again.getByTestId('mfa-disable-code').fill(recovery[1]);
  await again.getByTestId('mfa-disable-submit').click();
  await expect(again.getByTestId('mfa-status')).toHaveText('Off');
  await expect(again.getByTestId('mfa-notice')).toHaveText('Two-factor sign-in is off.');
  await expect(again.getByTestId('mfa-enroll')).toBeVisible();
  await signOut(page);
  await page.getByTestId('signin-email').fill(email);
  await page.getByTestId('signin-password').fill(PASSPHRASE);
  await page.getByTestId('signin-submit').click();
  await expect(page.getByTestId('shell')).toBeVisible();
});

test('the activity log lists an approved call with its digest, decision and outcome, never its arguments', async ({
  page,
}) => {
  await signUp(page, 'activity', 'Sam Secure');
  await page.getByTestId('nav-activity').click();
  await expect(page).toHaveURL(/\/activity$/);
  await expect(page.getByTestId('activity-empty')).toBeVisible();

  // Add the demo connector, keep search_notes, and approve one call.
  await addDemoConnector(page, ['search_notes']);
  await newChat(page);
  await ask(page, 'search_notes', SEARCH);
  const card = page.getByTestId('approval-card');
  await expect(card).toHaveCount(1, { timeout: REPLY_TIMEOUT });
  await allow(card);
  await expect(card.getByTestId('approval-status')).toContainText('Allowed once — ran successfully', {
    timeout: REPLY_TIMEOUT,
  });

  // The digest is SHA-256 of the arguments' canonical JSON (RFC 8785).
  const digest = createHash('sha256').update(JSON.stringify(SEARCH)).digest('hex');
  await page.getByTestId('nav-activity').click();
  await expect(page).toHaveURL(/\/activity$/);
  const call = page.getByTestId('activity-row');
  // The outcome is written right after the call ran: refresh until it is.
  await expect(async () => {
    await page.getByTestId('activity-refresh').click();
    await expect(call).toHaveCount(1, { timeout: 1_000 });
    await expect(call).toHaveAttribute('data-outcome', 'ok', { timeout: 1_000 });
  }).toPass({ timeout: 15_000 });
  await expect(call).toHaveAttribute('data-decision', 'approved');
  await expect(call.getByTestId('activity-connector')).toHaveText(DEMO_NAME);
  await expect(call.getByTestId('activity-tool')).toHaveText('search_notes');
  await expect(call.getByTestId('activity-decision')).toHaveText('You allowed it once');
  await expect(call.getByTestId('activity-outcome')).toHaveText('OK');
  await expect(call.getByTestId('activity-duration')).toHaveText(/^\d+(\.\d)? m?s$/);
  const shown = call.getByTestId('activity-digest');
  await expect(shown).toHaveAttribute('data-digest', digest);
  await expect(shown).toHaveAttribute('title', digest);
  // What is shown (innerText: the other half is display: none).
  await expect(shown).toHaveText(digest.slice(0, 12) + '…', { useInnerText: true });
  // Hovering shows the whole digest.
  await shown.hover();
  await expect(shown).toHaveText(digest, { useInnerText: true });
  // Never the arguments.
  await expect(page.getByTestId('activity-table')).not.toContainText('lease');
  // Reachable from Settings too.
  await page.getByTestId('nav-settings').click();
  await page.getByTestId('settings-activity-link').click();
  await expect(page).toHaveURL(/\/activity$/);
  await expect(page.getByTestId('activity-row')).toHaveCount(1);
  await snap(page, 'activity');
});

test("a connector's credentials can be replaced, and are never shown back", async ({ page }) => {
  await signUp(page, 'credentials', 'Sam Secure');
  await page.getByTestId('nav-settings').click();
  await page.getByTestId('connectors-section').getByTestId('available-add').first().click();
  const row = demoRow(page);
  await expect(row.getByTestId('connector-auth')).toHaveText('No authentication');

  await row.getByTestId('connector-credentials-edit').click();
  const form = row.getByTestId('connector-credentials-form');
  await expect(form).toBeVisible();
  await form.getByTestId('connector-credentials-auth').selectOption('bearer');
  await form.getByLabel('Bearer token').fill('e2e-secret-token');
  await form.getByTestId('connector-credentials-save').click();
  await expect(row.getByTestId('connector-credentials-notice')).toContainText('Credentials saved');
  await expect(form).toHaveCount(0);
  await expect(row.getByTestId('connector-auth')).toHaveText('Bearer token set');
  await expect(row.getByTestId('connector-credentials-edit')).toBeFocused();
  // Write-only: the token is nowhere on the page, not even after a reload.
  await page.reload();
  await expect(row.getByTestId('connector-auth')).toHaveText('Bearer token set');
  await expect(page.locator('body')).not.toContainText('e2e-secret-token');

  // Back to none.
  await row.getByTestId('connector-credentials-edit').click();
  await expect(form.getByTestId('connector-credentials-auth')).toHaveValue('bearer');
  await expect(form.getByLabel('Bearer token')).toHaveValue('');
  await form.getByTestId('connector-credentials-auth').selectOption('none');
  await form.getByTestId('connector-credentials-save').click();
  await expect(row.getByTestId('connector-auth')).toHaveText('No authentication');
});

/** A second browser (its own cookies), watched like the first, signed in as `email` with the password. */
async function otherBrowser(browser: Browser, testInfo: TestInfo, email: string) {
  const context = await browser.newContext({ baseURL: testInfo.project.use.baseURL });
  const page = await context.newPage();
  watch(page);
  try {
    await page.goto('/signin');
    await page.getByTestId('signin-email').fill(email);
    await page.getByTestId('signin-password').fill(PASSPHRASE);
    await page.getByTestId('signin-submit').click();
    await expect(page.getByTestId('shell')).toBeVisible();
  } catch (error) {
    await context.close();
    throw error;
  }
  return { context, page };
}

test('sessions: both browsers are listed, this one marked, and "Sign out other sessions" signs the other out', async ({
  page,
  browser,
}, testInfo) => {
  const email = await signUp(page, 'sessions', 'Sam Secure');
  const other = await otherBrowser(browser, testInfo, email);
  try {
    const security = await openSecurity(page);
    const sessions = security.getByTestId('session-row');
    await expect(sessions).toHaveCount(2);
    const current = security.locator('[data-testid="session-row"][data-current="true"]');
    await expect(current).toHaveCount(1);
    await expect(current.getByTestId('session-current')).toHaveText('This device');
    await expect(security.getByTestId('session-current')).toHaveCount(1);
    await expect(current.getByTestId('session-ip')).not.toBeEmpty();
    await snap(page, 'security-sessions');

    await security.getByTestId('sessions-revoke-others').click();
    await expect(security.getByTestId('sessions-notice')).toHaveText('Signed out 1 other session.');
    await expect(sessions).toHaveCount(1);
    await expect(sessions).toHaveAttribute('data-current', 'true');
    await expect(security.getByTestId('sessions-revoke-others')).toBeDisabled();

    // The other browser's next page load finds itself signed out.
    await other.page.goto('/settings');
    await expect(other.page).toHaveURL(/\/signin\?next=\/settings$/);
    await expect(other.page.getByTestId('signin-submit')).toBeVisible();
    // This one is still signed in.
    await page.reload();
    await expect(page.getByTestId('shell')).toBeVisible();
  } finally {
    await other.context.close();
  }
});

test('changing the password signs the other browser out, keeps this one, and only the new password signs in', async ({
  page,
  browser,
}, testInfo) => {
  const email = await signUp(page, 'password', 'Sam Secure');
  const other = await otherBrowser(browser, testInfo, email);
  const NEW_PASSPHRASE = 'amber Falcon meadow 12 cipher Lagoon';
  try {
    const security = await openSecurity(page);
    const form = security.getByTestId('password');
    // A mismatched confirmation never reaches the server.
    await form.getByLabel('Current password').fill(PASSPHRASE);
    await form.getByLabel('New password', { exact: true }).fill(NEW_PASSPHRASE);
    await form.getByLabel('Confirm new password').fill(`${NEW_PASSPHRASE}!`);
    await form.getByTestId('password-submit').click();
    await expect(form.getByTestId('password-error')).toContainText('do not match');
    // A wrong current password is the server's answer.
    await form.getByTestId('password-current').fill('not my password at all');
    await form.getByTestId('password-confirm').fill(NEW_PASSPHRASE);
    await form.getByTestId('password-submit').click();
    await expect(form.getByTestId('password-error')).toHaveText('Wrong password.');
    // The right one.
    await form.getByTestId('password-current').fill(PASSPHRASE);
    await form.getByTestId('password-submit').click();
    await expect(form.getByTestId('password-notice')).toHaveText(
      'Password changed. Other sessions were signed out.',
    );
    await expect(form.getByTestId('password-error')).toHaveCount(0);
    await snap(page, 'security-password-changed');
    await page.setViewportSize({ width: 390, height: 844 });
    await form.scrollIntoViewIfNeeded();
    await snap(page, 'security-password-changed-390');
    await page.setViewportSize({ width: 1280, height: 800 });

    // The other browser is signed out; this one is not.
    await other.page.goto('/settings');
    await expect(other.page).toHaveURL(/\/signin\?next=\/settings$/);
    await page.reload();
    await expect(page.getByTestId('shell')).toBeVisible();

    // Sign out; the old password no longer works, the new one does.
    await signOut(page);
    await page.getByTestId('signin-email').fill(email);
    await page.getByTestId('signin-password').fill(PASSPHRASE);
    await page.getByTestId('signin-submit').click();
    await expect(page.getByTestId('signin-error')).toContainText('Wrong email or password');
    await page.getByTestId('signin-password').fill(NEW_PASSPHRASE);
    await page.getByTestId('signin-submit').click();
    await expect(page.getByTestId('shell')).toBeVisible();
    await expect(page.getByTestId('user-email')).toHaveText(email);
  } finally {
    await other.context.close();
  }
});

test('step-up: a session from before two-factor sign-in was set up is asked for a code before it saves a key', async ({
  page,
  browser,
}, testInfo) => {
  const email = await signUp(page, 'step-up', 'Sam Secure');
  const other = await otherBrowser(browser, testInfo, email);
  try {
    // Two-factor sign-in set up in this browser (which counts as its step-up).
    const mfa = (await openSecurity(page)).getByTestId('mfa');
    await mfa.getByTestId('mfa-enroll-password').fill(PASSPHRASE);
    await mfa.getByTestId('mfa-enroll').click();
    const secretText = (await mfa.getByTestId('mfa-secret').textContent())?.trim() ?? '';
    const phone = new Authenticator(base32Decode(secretText));
    await mfa.getByTestId('mfa-confirm-code').fill(await phone.next());
    await mfa.getByTestId('mfa-confirm-submit').click();
    await expect(mfa.getByTestId('mfa-status')).toHaveText('On');

    // The other browser saves a provider key: the server wants a code first.
    const them = other.page;
    await them.goto('/settings/models');
    await them.getByTestId('key-input-openai').fill('sk-e2e-not-a-real-key-0123456789');
    await them.getByTestId('key-save-openai').click();
    const dialog = them.getByTestId('step-up-dialog');
    await expect(dialog).toBeVisible();
    await expect(dialog.getByRole('heading', { name: "Confirm it's you" })).toBeVisible();
    await expect(them.getByRole('dialog', { name: "Confirm it's you" })).toHaveAccessibleDescription(
      'Enter the code from your authenticator app to continue.',
    );
    await expect(dialog.getByTestId('step-up-code')).toBeFocused();
    await expect(them.getByTestId('key-status-openai')).toHaveText('Not set');
    await everyWay(them, 'step-up-dialog');

    // A wrong code: said in the dialog, which stays open; nothing saved.
    await dialog.getByTestId('step-up-code').fill('000000');
    await dialog.getByTestId('step-up-submit').click();
    await expect(dialog.getByTestId('step-up-error')).toContainText('not valid');
    await expect(dialog).toBeVisible();
    await everyWay(them, 'step-up-dialog-error');

    // The right one, with Enter: the dialog closes and the save goes through.
    await dialog.getByTestId('step-up-code').fill(await phone.next());
    await dialog.getByTestId('step-up-code').press('Enter');
    await expect(dialog).toBeHidden();
    await expect(them.getByTestId('key-status-openai')).toHaveText('Key set');
    await expect(them.getByTestId('key-notice-openai')).toHaveText('Key saved.');
  } finally {
    await other.context.close();
  }
});
