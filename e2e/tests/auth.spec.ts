// Journey: a person creates an account, signs out, mistypes their password,
// signs in, reloads, and signs out again; plus the server's password rule
// shown inline on sign-up.
import { expect, test } from '@playwright/test';
import { PASSPHRASE, guardPages, signOut, snap, uniqueEmail } from './support';

guardPages();

test('a new user signs up, signs out, fails and then succeeds to sign in, and stays signed in across a reload', async ({
  page,
}) => {
  const email = uniqueEmail('journey');

  // Not signed in: the app sends visitors of / to the sign-in page.
  await page.goto('/');
  await expect(page).toHaveURL(/\/signin$/);
  // The "New here?" line is plain text with a link, not the trust toggle's
  // grey pill (issue 12 item 4: both used the class `switch`).
  const line = page.getByTestId('auth-switch');
  await expect(line).toHaveText('New here? Create an account');
  const look = await line.evaluate((el) => {
    const style = getComputedStyle(el);
    return { background: style.backgroundColor, radius: style.borderRadius, color: style.color };
  });
  expect(look.background, 'no pill behind the line').toBe('rgba(0, 0, 0, 0)');
  expect(look.radius).toBe('0px');
  await snap(page, 'signin-switch-line');
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

  // Signed out for real: the server no longer knows the session. Sign-in
  // remembers where the visitor was going and goes back there, not to /
  // (issue 12 item 6).
  await page.goto('/settings');
  await expect(page).toHaveURL(/\/signin\?next=\/settings$/);
  await page.getByTestId('signin-email').fill(email);
  await page.getByTestId('signin-password').fill(PASSPHRASE);
  await page.getByTestId('signin-submit').click();
  await expect(page).toHaveURL(/\/settings$/);
  await expect(page.getByTestId('shell')).toBeVisible();

  // A crafted `next` to another site is not followed.
  await signOut(page);
  await page.goto('/signin?next=//evil.example/');
  await page.getByTestId('signin-email').fill(email);
  await page.getByTestId('signin-password').fill(PASSPHRASE);
  await page.getByTestId('signin-submit').click();
  await expect(page.getByTestId('shell')).toBeVisible();
  expect(new URL(page.url()).host).toBe(new URL(await page.evaluate(() => location.origin)).host);
  await expect(page).toHaveURL(/\/$/);
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
