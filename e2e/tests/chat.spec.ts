// Journeys through a chat with the offline demo model: a reply streams in,
// survives a reload, shows live in a second tab, and can be stopped; plus
// rename and delete, provider keys in Settings, and a Markdown-safety smoke
// test in the real browser.
//
// The server under test streams the demo reply one word every 150 ms
// (COUNTERSIGN_DEMO_WORD_DELAY_MS=150, set by `cargo xtask test`), so a
// plain reply of ~45 words takes ~7 s: long enough to reload, open a second
// tab or press Stop in the middle of it. Nothing here sleeps: every wait is
// an assertion that polls.
import { expect, test, type Locator } from '@playwright/test';
import { REPLY_TIMEOUT, guardPages, newChat, say, signUp, snap } from './support';

// The offline demo's reply opens and ends with these.
const REPLY_START = 'This is the offline demo model';
const REPLY_END = 'Name a tool';

test.setTimeout(90_000);

guardPages();

async function textLength(locator: Locator): Promise<number> {
  return (await locator.innerText()).length;
}

/** Waits until `locator`'s text is longer than `than` characters. */
async function waitForText(locator: Locator, than: number) {
  await expect.poll(() => textLength(locator), { timeout: REPLY_TIMEOUT }).toBeGreaterThan(than);
}

function occurrences(haystack: string, needle: string): number {
  return haystack.split(needle).length - 1;
}

test('a message gets a streamed answer, and the chat appears in the sidebar with its title', async ({ page }) => {
  await signUp(page, 'stream');
  await expect(page.getByTestId('home-empty-state')).toBeVisible();
  await newChat(page);
  await expect(page.getByTestId('model-picker')).toHaveValue('offline/demo');
  await expect(page.getByTestId('chat-title')).toHaveText('New chat');

  // Enter sends (Shift+Enter would add a line).
  const input = page.getByTestId('composer-input');
  await input.fill('Hello from the e2e test');
  await input.press('Enter');

  await expect(page.getByTestId('message-user')).toHaveText('Hello from the e2e test');
  const answer = page.getByTestId('message-assistant');
  await expect(answer).toHaveCount(1);
  await expect(answer).toHaveAttribute('data-streaming', 'true');
  await expect(answer).toHaveAttribute('aria-busy', 'true');
  await expect(page.getByTestId('stop-turn')).toBeVisible();
  await expect(page.getByTestId('composer-send')).toBeDisabled();

  // The text grows while the turn runs.
  await waitForText(answer, 0);
  const early = await textLength(answer);
  await waitForText(answer, early + 10);
  await expect(answer).toHaveAttribute('data-streaming', 'true');

  // Then the turn ends.
  await expect(answer).not.toHaveAttribute('data-streaming', { timeout: REPLY_TIMEOUT });
  await expect(answer).not.toHaveAttribute('aria-busy');
  await expect(answer).toContainText('offline demo model');
  await expect(answer).toContainText(REPLY_END);
  await expect(answer.getByTestId('assistant-status')).toHaveCount(0);
  await expect(page.getByTestId('stop-turn')).toHaveCount(0);

  // The server titled the chat after the message; the sidebar shows it, marked current.
  const link = page.getByTestId('chat-list').getByTestId('chat-link');
  await expect(link).toHaveCount(1);
  await expect(link).toHaveText('Hello from the e2e test');
  await expect(link).toHaveAttribute('aria-current', 'page');
  await expect(page.getByTestId('chat-title')).toHaveText('Hello from the e2e test');

  await snap(page, 'chat-streamed-answer');
});

test('a reload in the middle of a turn picks the stream up where it was, without duplicates', async ({ page }) => {
  await signUp(page, 'reload');
  await newChat(page);
  await say(page, 'Please keep going across a reload');

  const answer = page.getByTestId('message-assistant');
  await waitForText(answer, 20);
  await expect(answer).toHaveAttribute('data-streaming', 'true');

  await page.reload();

  // The same turn, still running, rebuilt from the replay and then live.
  await expect(page.getByTestId('message-user')).toHaveText('Please keep going across a reload');
  await expect(answer).toHaveCount(1);
  await expect(answer).toHaveAttribute('data-streaming', 'true');
  await expect(answer).not.toHaveAttribute('data-streaming', { timeout: REPLY_TIMEOUT });
  await expect(answer).toContainText(REPLY_END);

  // The whole reply exactly once.
  const transcript = await page.getByTestId('transcript').innerText();
  expect(occurrences(transcript, REPLY_START)).toBe(1);
  expect(occurrences(transcript, REPLY_END)).toBe(1);
  expect((await answer.innerText()).trim().startsWith(REPLY_START)).toBe(true);
  await expect(page.getByTestId('message-user')).toHaveCount(1);

  // And once more after the turn ended: the stored message, once.
  await page.reload();
  await expect(answer).toHaveCount(1);
  await expect(answer).toContainText(REPLY_END);
  expect(occurrences(await page.getByTestId('transcript').innerText(), REPLY_START)).toBe(1);

  await snap(page, 'chat-after-reload');
});

test('a second tab on the same chat shows a turn sent from the first one live', async ({ context, page }) => {
  await signUp(page, 'tabs');
  await newChat(page);
  const second = await context.newPage();
  await second.goto(page.url());
  await expect(second.getByTestId('composer-input')).toBeVisible();
  await expect(second.getByTestId('transcript-empty')).toBeVisible();

  await say(page, 'Sent from the first tab');

  await expect(second.getByTestId('message-user')).toHaveText('Sent from the first tab');
  const answer = second.getByTestId('message-assistant');
  await expect(answer).toHaveAttribute('data-streaming', 'true');
  await expect(second.getByTestId('stop-turn')).toBeVisible();
  await waitForText(answer, 0);
  const early = await textLength(answer);
  await waitForText(answer, early + 10);
  await expect(answer).not.toHaveAttribute('data-streaming', { timeout: REPLY_TIMEOUT });
  await expect(answer).toContainText('offline demo model');
  await expect(answer).toContainText(REPLY_END);

  // Both tabs end with the same answer.
  const first = page.getByTestId('message-assistant');
  await expect(first).not.toHaveAttribute('data-streaming', { timeout: REPLY_TIMEOUT });
  expect(await first.innerText()).toBe(await answer.innerText());

  await snap(second, 'chat-second-tab');
  await second.close();
});

test('Stop ends the answer, keeps what was written, and the chat goes on', async ({ page }) => {
  await signUp(page, 'stop');
  await newChat(page);
  await say(page, 'Start and then stop');

  const answer = page.getByTestId('message-assistant');
  // Past the opening words, so that what is kept starts with all of them
  // (a Stop pressed at 21 characters can keep "This is the offline demo").
  await waitForText(answer, REPLY_START.length + 10);
  await page.getByTestId('stop-turn').click();

  await expect(answer.getByTestId('assistant-status')).toHaveText('Stopped');
  await expect(answer).not.toHaveAttribute('data-streaming');
  await expect(page.getByTestId('stop-turn')).toHaveCount(0);
  const partial = (await answer.innerText()).replace(/\s*Stopped\s*$/, '');
  expect(partial.trim().startsWith(REPLY_START)).toBe(true);
  expect(partial).not.toContain(REPLY_END);

  // The stopped answer is stored as stopped.
  await page.reload();
  await expect(answer.getByTestId('assistant-status')).toHaveText('Stopped');
  await expect(answer).toContainText(REPLY_START);

  // The composer works again.
  await say(page, 'And now a full answer');
  await expect(page.getByTestId('message-user')).toHaveCount(2);
  const next = page.getByTestId('message-assistant').nth(1);
  await expect(next).toHaveAttribute('data-streaming', 'true');
  await waitForText(next, 0);
  await expect(next).not.toHaveAttribute('data-streaming', { timeout: REPLY_TIMEOUT });
  await expect(next).toContainText(REPLY_END);
  await expect(next.getByTestId('assistant-status')).toHaveCount(0);

  await snap(page, 'chat-stopped');
});

test('the transcript follows a streaming answer until the reader scrolls up', async ({ page }) => {
  // A short window, so that one answer overflows the transcript.
  await page.setViewportSize({ width: 1100, height: 420 });
  await signUp(page, 'scroll');
  await newChat(page);
  const transcript = page.getByTestId('transcript');
  const distanceFromBottom = () =>
    transcript.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight);
  const overflowing = () => transcript.evaluate((el) => el.scrollHeight > el.clientHeight + 40);

  // Following: while the answer streams past the fold, the view stays at the bottom.
  await say(page, 'Fill the window please');
  const first = page.getByTestId('message-assistant');
  await expect.poll(overflowing, { timeout: REPLY_TIMEOUT }).toBe(true);
  await expect(first).toHaveAttribute('data-streaming', 'true');
  await expect.poll(distanceFromBottom).toBeLessThan(50);
  await expect(first).not.toHaveAttribute('data-streaming', { timeout: REPLY_TIMEOUT });
  await expect.poll(distanceFromBottom).toBeLessThan(50);

  // Scrolled up: the view stays where the reader put it while text arrives.
  await say(page, 'Now I will scroll up');
  const second = page.getByTestId('message-assistant').nth(1);
  await waitForText(second, 20);
  // A reader scrolls up; if an auto-scroll already requested for this
  // frame lands first, they scroll again, as a person would.
  await expect
    .poll(
      async () => {
        await transcript.evaluate((el) => el.scrollTo({ top: 0 }));
        return page.getByTestId('scroll-latest').isVisible();
      },
      { timeout: 10_000 },
    )
    .toBe(true);
  const grown = await textLength(second);
  await waitForText(second, grown + 30);
  expect(await transcript.evaluate((el) => el.scrollTop)).toBeLessThan(5);

  // Back to the bottom: following again.
  await page.getByTestId('scroll-latest').click();
  await expect(page.getByTestId('scroll-latest')).toHaveCount(0);
  const later = await textLength(second);
  await waitForText(second, later + 20);
  await expect.poll(distanceFromBottom).toBeLessThan(50);
  await expect(second).not.toHaveAttribute('data-streaming', { timeout: REPLY_TIMEOUT });
  await expect.poll(distanceFromBottom).toBeLessThan(50);
});

test('leaving a chat closes its live connection', async ({ page }) => {
  // Browsers allow few connections per origin: a leaked stream per visited
  // chat would soon stall every request of the app.
  const opened: string[] = [];
  const closed: string[] = [];
  page.on('request', (request) => {
    if (request.url().includes('/stream')) opened.push(request.url());
  });
  page.on('requestfailed', (request) => {
    if (request.url().includes('/stream')) closed.push(request.url());
  });

  await signUp(page, 'leave');
  await newChat(page);
  const first = page.url();
  await newChat(page);
  await expect(page).not.toHaveURL(first);
  await page.getByTestId('chat-link').nth(1).click();
  await expect(page).toHaveURL(first);
  await expect(page.getByTestId('composer-input')).toBeVisible();
  await page.getByTestId('nav-settings').click();
  await page.getByTestId('settings-tab-models').click();
  await expect(page.getByTestId('key-status-openai')).toBeVisible();

  await expect.poll(() => opened.length).toBe(3);
  await expect.poll(() => closed.length).toBe(3);
  expect(closed.sort()).toEqual(opened.sort());
});

test('a chat can be renamed and deleted with the keyboard', async ({ page }) => {
  await signUp(page, 'rename');
  await newChat(page);
  const link = page.getByTestId('chat-link');
  await expect(link).toHaveText('New chat');

  // Rename: the button, then type and press Enter.
  await page.getByTestId('rename-chat').focus();
  await page.keyboard.press('Enter');
  const title = page.getByTestId('rename-input');
  await expect(title).toBeFocused();
  await title.fill('Lease questions');
  await title.press('Enter');
  await expect(page.getByTestId('chat-title')).toHaveText('Lease questions');
  await expect(link).toHaveText('Lease questions');
  await expect(page.getByTestId('rename-chat')).toBeFocused();

  // Escape cancels a rename.
  await page.keyboard.press('Enter');
  await page.getByTestId('rename-input').fill('Not this');
  await page.keyboard.press('Escape');
  await expect(page.getByTestId('chat-title')).toHaveText('Lease questions');

  // Delete asks first; Cancel keeps the chat.
  await page.getByTestId('delete-chat').focus();
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('delete-dialog')).toContainText('Lease questions');
  await expect(page.getByTestId('delete-cancel')).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('delete-dialog')).toHaveCount(0);
  await expect(link).toHaveCount(1);

  await page.getByTestId('delete-chat').click();
  await snap(page, 'chat-delete-confirmation');
  await page.getByTestId('delete-confirm').focus();
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(/\/$/);
  await expect(page.getByTestId('chat-link')).toHaveCount(0);
  await expect(page.getByTestId('home-empty-state')).toBeVisible();
});

test('Settings stores and removes a provider key without ever showing it', async ({ page }) => {
  await signUp(page, 'keys');
  await page.getByTestId('nav-settings').click();
  await page.getByTestId('settings-tab-models').click();
  await expect(page).toHaveURL(/\/settings\/models$/);

  for (const provider of ['anthropic', 'openai']) {
    await expect(page.getByTestId(`key-status-${provider}`)).toHaveText('Not set');
    await expect(page.getByTestId(`key-input-${provider}`)).toHaveAttribute('type', 'password');
    await expect(page.getByTestId(`key-remove-${provider}`)).toBeDisabled();
  }

  const secret = 'sk-e2e-not-a-real-key-0123456789';
  await page.getByTestId('key-input-openai').fill(secret);
  await page.getByTestId('key-save-openai').click();
  // A server without COUNTERSIGN_SECRET_KEY refuses (503) and says why.
  const saved = page.getByTestId('key-status-openai').filter({ hasText: 'Key set' });
  const refused = page.getByTestId('key-error-openai');
  await expect(saved.or(refused)).toBeVisible();
  if (await refused.isVisible()) {
    await expect(refused).toHaveAttribute('role', 'alert');
    await expect(refused).not.toBeEmpty();
    test.info().annotations.push({ type: 'note', description: 'server has no secret key: save refused' });
    return;
  }
  await expect(page.getByTestId('key-input-openai')).toHaveValue('');
  await expect(page.getByTestId('key-status-anthropic')).toHaveText('Not set');
  expect(await page.content()).not.toContain(secret);

  await page.reload();
  await expect(page.getByTestId('key-status-openai')).toHaveText('Key set');
  await snap(page, 'settings-provider-keys');

  await page.getByTestId('key-remove-openai').click();
  await expect(page.getByTestId('key-status-openai')).toHaveText('Not set');
});

test('HTML and script links in an answer are shown as text, never run', async ({ page }) => {
  await signUp(page, 'markdown');
  await newChat(page);
  // The demo echoes the message into its reply, which is rendered as Markdown.
  const hostile = '<img src=x onerror="window.__xss=1"> [go](javascript:window.__xss=2) **bold**';
  await say(page, hostile);

  const answer = page.getByTestId('message-assistant');
  await expect(answer).not.toHaveAttribute('data-streaming', { timeout: REPLY_TIMEOUT });
  await expect(page.getByTestId('message-user')).toHaveText(hostile);
  await expect(answer).toContainText('<img src=x onerror="window.__xss=1">');
  await expect(answer.locator('img')).toHaveCount(0);
  // The refused link keeps its text and loses the link.
  await expect(answer.locator('a')).toHaveCount(0);
  await expect(answer).toContainText('go');
  await expect(answer.locator('strong')).toHaveText('bold');
  expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
  await snap(page, 'chat-markdown-safety');
});

test('an answer in Markdown is drawn as elements: headings, lists, code, links, tables, quotes', async ({ page }) => {
  await signUp(page, 'markdown-look');
  await newChat(page);
  await say(page, 'hello');
  const answer = page.getByTestId('message-assistant');
  await expect(answer).not.toHaveAttribute('data-streaming', { timeout: REPLY_TIMEOUT });

  // The offline demo only echoes 80 characters: the stored answer, as the
  // server sends it back on a reload, is replaced by a longer one.
  const markdown = [
    '## What I found',
    '',
    'Three **notes** mention *the launch*, one of them `draft.md`:',
    '',
    '1. The plan',
    '   - owner: ~~Ann~~ Bo',
    '   - due Friday',
    '2. The [tracker](https://tracker.example/launch "Launch board")',
    '',
    '- [x] reviewed',
    '- [ ] sent',
    '',
    '```rust',
    'fn main() { println!("<ok>"); }',
    '```',
    '',
    '| Note | Words |',
    '|:-----|------:|',
    '| plan | 1,204 |',
    '| todo | 88 |',
    '',
    '> [!NOTE]',
    '> Nothing was changed.',
    '',
    '---',
    '',
    '![chart](https://img.example/c.png) <b>not bold</b>',
  ].join('\n');
  await page.route(/\/api\/chats\/[0-9a-f-]{36}$/, async (route) => {
    const response = await route.fetch();
    const chat = await response.json();
    for (const message of chat.messages) if (message.role === 'assistant') message.content = markdown;
    await route.fulfill({ response, json: chat });
  });
  await page.reload();
  const drawn = page.getByTestId('message-assistant').locator('.markdown');
  await expect(drawn.locator('h2')).toHaveText('What I found');
  await expect(drawn.locator('p strong')).toHaveText('notes');
  await expect(drawn.locator('p em')).toHaveText('the launch');
  await expect(drawn.locator('p code')).toHaveText('draft.md');
  await expect(drawn.locator('ol > li')).toHaveCount(2);
  await expect(drawn.locator('ol > li ul > li')).toHaveCount(2);
  await expect(drawn.locator('del')).toHaveText('Ann');
  const link = drawn.locator('a', { hasText: 'tracker' });
  await expect(link).toHaveAttribute('href', 'https://tracker.example/launch');
  await expect(link).toHaveAttribute('title', 'Launch board');
  await expect(link).toHaveAttribute('rel', 'noopener noreferrer');
  await expect(link).toHaveAttribute('target', '_blank');
  await expect(drawn.locator('ul').last()).toContainText('☑ reviewed');
  await expect(drawn.locator('pre code.language-rust')).toHaveText('fn main() { println!("<ok>"); }');
  await expect(drawn.locator('th.align-left')).toHaveText('Note');
  await expect(drawn.locator('td.align-right').first()).toHaveText('1,204');
  await expect(drawn.locator('blockquote.callout.note')).toHaveText('Nothing was changed.');
  await expect(drawn.locator('hr')).toHaveCount(1);
  // An image is a link to it, never loaded; raw HTML is text.
  await expect(drawn.locator('img')).toHaveCount(0);
  await expect(drawn.locator('a', { hasText: '[image: chart]' })).toHaveAttribute('href', 'https://img.example/c.png');
  await expect(drawn).toContainText('<b>not bold</b>');
  await expect(drawn.locator('b')).toHaveCount(0);
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await drawn.scrollIntoViewIfNeeded();
    await snap(page, `chat-markdown-${width}`);
  }
});
