// Delivery of the real build (DESIGN §9a), as a browser receives it: the
// page is revalidated on every visit (`no-cache`), and everything it loads
// — the stylesheet, the loader, wasm-bindgen's glue, the chunk loader and
// the wasm — has a content-hashed name under /assets/, comes as the
// build's brotli twin when asked for br, and is kept for a year
// (`immutable`). The size of that first load on the wire is written to the
// report, and so is a chat page's first load in the browser, lazy chunks
// included.
import { expect, test } from '@playwright/test';
import { guardPages, newChat, signUp } from './support';

test('the first load: hashed assets come precompressed and immutable, the page is revalidated', async ({ request }) => {
  const page = await request.get('/', { headers: { 'accept-encoding': 'br' } });
  expect(page.status()).toBe(200);
  expect(page.headers()['cache-control']).toBe('no-cache');
  expect(page.headers()['content-encoding']).toBe('br');
  const html = await page.text();
  expect(html, 'nothing loads from the unhashed build folder').not.toContain('/pkg/');
  const assets = [...new Set([...html.matchAll(/"(\/assets\/[^"]+)"/g)].map((m) => m[1]))];
  expect(assets.map((a) => a.replace(/\.[0-9a-f]{16}\./, '.HASH.')).sort()).toEqual([
    '/assets/__wasm_split.HASH.js',
    '/assets/app.HASH.css',
    '/assets/app.HASH.js',
    '/assets/countersign_web.HASH.js',
    '/assets/countersign_web_bg.HASH.wasm',
  ]);

  let wire = 0;
  for (const asset of assets) {
    const response = await request.get(asset, { headers: { 'accept-encoding': 'br' } });
    expect(response.status(), asset).toBe(200);
    const headers = response.headers();
    expect(headers['content-encoding'], asset).toBe('br');
    expect(headers['cache-control'], asset).toBe('public, max-age=31536000, immutable');
    expect(headers['vary'], asset).toBe('accept-encoding');
    if (asset.endsWith('.wasm')) expect(headers['content-type']).toBe('application/wasm');
    wire += Number(headers['content-length']);
  }
  // The loader names the hashed glue and wasm it loads.
  const loader = assets.find((a) => /\/app\.[0-9a-f]{16}\.js$/.test(a))!;
  const loaderText = await (await request.get(loader)).text();
  for (const asset of assets.filter((a) => /countersign_web[._]/.test(a))) {
    expect(loaderText, `${loader} loads ${asset}`).toContain(asset);
  }
  test.info().annotations.push({ type: 'first load (brotli, wasm + JS + CSS)', description: `${wire} bytes` });
  console.log(`first load on the wire (brotli): ${(wire / 1024).toFixed(1)} KiB`);

  // An address the build never made: a 404, never the page.
  const missing = await request.get('/assets/app.ffffffffffffffff.js');
  expect(missing.status()).toBe(404);
});

test.describe('in the browser', () => {
  guardPages();

  test('a chat page opened afresh loads the main module and no lazy chunk', async ({ browser, page }) => {
    await signUp(page, 'delivery');
    await newChat(page);
    const chat = page.url();

    // A new context with the same session but an empty cache: what a
    // signed-in user's first visit to a chat costs.
    const fresh = await browser.newContext({ storageState: await page.context().storageState() });
    const tab = await fresh.newPage();
    const loads: Promise<[string, number]>[] = [];
    tab.on('requestfinished', (request) => {
      const path = new URL(request.url()).pathname;
      if (path.startsWith('/assets/')) {
        loads.push(request.sizes().then((sizes) => [path, sizes.responseBodySize]));
      }
    });
    await tab.goto(chat);
    await expect(tab.getByTestId('composer-input')).toBeVisible();
    await expect(tab.getByTestId('chat-title')).toHaveText('New chat');
    const files = await Promise.all(loads);
    const wire = files.reduce((sum, [, bytes]) => sum + bytes, 0);
    for (const [path, bytes] of files) console.log(`  ${path}: ${bytes} bytes`);
    expect(
      files.map(([path]) => path).filter((path) => path.endsWith('.wasm') && !/countersign_web_bg/.test(path)),
      'the chat page needs no lazy chunk',
    ).toEqual([]);
    test.info().annotations.push({ type: 'chat page first load (brotli, in the browser)', description: `${wire} bytes` });
    console.log(`a chat page's first load in the browser (brotli): ${(wire / 1024).toFixed(1)} KiB`);

    // Settings is a chunk of its own, fetched when first opened.
    const before = files.length;
    await tab.goto(chat.replace(/\/chats\/.*$/, '/settings/security'));
    await expect(tab.getByTestId('settings-tab-security')).toBeVisible();
    const after = await Promise.all(loads);
    const chunks = after.slice(before).filter(([path]) => path.endsWith('.wasm') && !/countersign_web_bg/.test(path));
    for (const [path, bytes] of chunks) console.log(`  then Settings → Security: ${path}: ${bytes} bytes`);
    await fresh.close();
  });
});
