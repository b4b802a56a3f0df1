// Journey: a person creates an account, signs out, mistypes their password,
// signs in, reloads, and signs out again; plus the server's password rule
// shown inline on sign-up.
import path from 'node:path';
import { expect, test, type Page } from '@playwright/test';

// Long, random-looking and unrelated words: passes any strength check.
const PASSPHRASE = 'copper Lantern orbit 47 quietly Harbour';

function uniqueEmail(label: string): string {
  return `e2e-${label}-${Date.now()}-${Math.floor(Math.random() * 1e6)}@example.com`;
}

// The server's CSP forbids inline scripts and styles; a violation or an
// uncaught error in the page fails the test even if the journey got through.
let problems: string[] = [];

test.beforeEach(({ page }) => {
  problems = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content.Security.Policy|panicked/i.test(message.text())) {
      problems.push(`console: ${message.text()}`);
    }
  });
});

test.afterEach(() => {
  expect(problems, 'CSP violations or page errors').toEqual([]);
});

/** Saves `e2e/artifacts/<name>.png`, whatever the working directory. */
async function snap(page: Page, name: string) {
  await page.screenshot({ path: path.join(__dirname, '..', 'artifacts', `${name}.png`), fullPage: true });
}

async function signOut(page: Page) {
  await page.getByTestId('signout').click();
  await expect(page).toHaveURL(/\/signin$/);
  await expect(page.getByTestId('signin-submit')).toBeVisible();
}

test('a new user signs up, signs out, fails and then succeeds to sign in, and stays signed in across a reload', async ({
  page,
}) => {
  const email = uniqueEmail('journey');

  // Not signed in: the app sends visitors of / to the sign-in page.
  await page.goto('/');
  await expect(page).toHaveURL(/\/signin$/);
  await page.getByRole('link', { name: 'Create an account' }).click();
  await expect(page).toHaveURL(/\/signup$/);

  // Sign up → the shell, showing who is signed in.
  await page.getByTestId('signup-email').fill(email);
  await page.getByTestId('signup-name').fill('Erin Example');
  await page.getByTestId('signup-password').fill(PASSPHRASE);
  await page.getByTestId('signup-submit').click();
  await expect(page).toHaveURL(/\/$/);
  await expect(page.getByTestId('shell')).toBeVisible();
  await expect(page.getByTestId('user-email')).toHaveText(email);
  await expect(page.getByRole('heading', { level: 1 })).toContainText('Erin Example');

  // Settings is reachable from the sidebar.
  await page.getByTestId('nav-settings').click();
  await expect(page).toHaveURL(/\/settings$/);
  await expect(page.getByRole('heading', { level: 1, name: 'Settings' })).toBeVisible();

  await signOut(page);

  // A wrong password: the server's message, inline, and still on /signin.
  await page.getByTestId('signin-email').fill(email);
  await page.getByTestId('signin-password').fill(`${PASSPHRASE} wrong`);
  await page.getByTestId('signin-submit').click();
  await expect(page.getByTestId('signin-error')).toHaveText('Wrong email or password.');
  await expect(page).toHaveURL(/\/signin$/);

  // The right one, submitted with Enter.
  await page.getByTestId('signin-password').fill(PASSPHRASE);
  await page.getByTestId('signin-password').press('Enter');
  await expect(page).toHaveURL(/\/$/);
  await expect(page.getByTestId('user-email')).toHaveText(email);

  // The session survives a reload (cookie + GET /api/auth/me).
  await page.reload();
  await expect(page.getByTestId('shell')).toBeVisible();
  await expect(page.getByTestId('user-email')).toHaveText(email);

  // Signed in: the sign-in page sends you home.
  await page.goto('/signin');
  await expect(page).toHaveURL(/\/$/);
  await expect(page.getByTestId('shell')).toBeVisible();

  await snap(page, 'auth-journey');

  await signOut(page);

  // Signed out for real: the server no longer knows the session.
  await page.goto('/settings');
  await expect(page).toHaveURL(/\/signin$/);
});

test('sign-up with a too-short password shows the server message inline', async ({ page }) => {
  await page.goto('/signup');
  await page.getByTestId('signup-email').fill(uniqueEmail('short'));
  await page.getByTestId('signup-password').fill('short');
  await page.getByTestId('signup-submit').click();

  const error = page.getByTestId('signup-error');
  await expect(error).toBeVisible();
  await expect(error).toHaveAttribute('role', 'alert');
  await expect(error).not.toBeEmpty();
  await expect(page).toHaveURL(/\/signup$/);
  await expect(page.getByTestId('signup-submit')).toBeEnabled();

  await snap(page, 'signup-short-password');
});
