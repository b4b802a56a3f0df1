// Single sign-on (issue 47 item 1) in the browser: the sign-in page's
// button goes to the organisation's identity provider (a loopback one that
// signs in whoever the test names) and back signed in; a refusal is said on
// the sign-in page once; an existing password account is linked after its
// password. Each page checked with axe and pictured at 1280 and 390 px,
// light and dark.
import { type APIRequestContext, expect, test } from '@playwright/test';
import { PASSPHRASE, everyWay, guardPages, signOut, signUp, snap } from './support';

const IDP = process.env.COUNTERSIGN_E2E_IDP ?? '';

guardPages();

/** Tells the provider who signs in next. */
async function signInAtProvider(request: APIRequestContext, person: { sub: string; email: string; name?: string }) {
  expect(IDP, 'COUNTERSIGN_E2E_IDP (cargo xtask sets it)').not.toBe('');
  const answer = await request.post(`${IDP}/test/sign-in-as`, { data: person });
  expect(answer.status()).toBe(204);
}

function unique(label: string): string {
  return `${label}-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
}

test('the sign-in button goes to the provider and back signed in, and a refusal is said once', async ({
  page,
  request,
}) => {
  await page.goto('/signin');
  const button = page.getByTestId('sso-signin');
  await expect(button).toHaveText('Sign in with Firm ID');
  await expect(page.getByTestId('signin-password')).toBeVisible();
  await everyWay(page, 'sso-signin');

  // Someone of the firm: the first sign-in makes the account.
  const sub = unique('sso');
  await signInAtProvider(request, { sub, email: `${sub}@firm.example`, name: 'Sam Single' });
  await button.click();
  await expect(page.getByTestId('shell')).toBeVisible();
  await expect(page).toHaveURL(/\/$/);
  await expect(page.getByTestId('shell')).toContainText('Sam Single');
  await snap(page, 'sso-signed-in');
  await signOut(page);

  // Someone the firm does not let in: said on the sign-in page, once.
  const outsider = unique('out');
  await signInAtProvider(request, { sub: outsider, email: `${outsider}@elsewhere.example` });
  await page.getByTestId('sso-signin').click();
  const said = page.getByTestId('sso-error');
  await expect(said).toHaveText(
    'Accounts for elsewhere.example cannot be created here. Ask your administrator.',
  );
  await expect(page).toHaveURL(/\/signin$/);
  await everyWay(page, 'sso-refused');
  await page.reload();
  await expect(page.getByTestId('sso-signin')).toBeVisible();
  await expect(page.getByTestId('sso-error')).toHaveCount(0);
});

test('an existing password account is linked once its password is given, then the provider alone signs in', async ({
  page,
  request,
}) => {
  const email = await signUp(page, 'sso-link');
  await signOut(page);

  const sub = unique('link');
  await signInAtProvider(request, { sub, email });
  await page.getByTestId('sso-signin').click();
  await expect(page).toHaveURL(/\/signin\?link=1$/);
  await expect(page.getByTestId('link-lead')).toContainText('already exists here');
  await expect(page.getByTestId('sso-signin')).toHaveCount(0);
  await everyWay(page, 'sso-link');

  await page.getByTestId('signin-password').fill('not the password at all');
  await page.getByTestId('link-submit').click();
  await expect(page.getByTestId('link-error')).toBeVisible();
  await page.getByTestId('signin-password').fill(PASSPHRASE);
  await page.getByTestId('link-submit').click();
  await expect(page.getByTestId('shell')).toBeVisible();
  await signOut(page);

  // Linked: the provider's sign-in is enough now.
  await page.getByTestId('sso-signin').click();
  await expect(page.getByTestId('shell')).toBeVisible();
});
