// Delivery of the real build (DESIGN §9a), as a browser receives it: the
// page is revalidated on every visit (`no-cache`), and everything it loads
// — the stylesheet, the loader, wasm-bindgen's glue and the wasm — has a
// content-hashed name under /assets/, comes as the build's brotli twin
// when asked for br, and is kept for a year (`immutable`). The size of
// that first load on the wire is written to the report.
import { expect, test } from '@playwright/test';

test('the first load: hashed assets come precompressed and immutable, the page is revalidated', async ({ request }) => {
  const page = await request.get('/', { headers: { 'accept-encoding': 'br' } });
  expect(page.status()).toBe(200);
  expect(page.headers()['cache-control']).toBe('no-cache');
  expect(page.headers()['content-encoding']).toBe('br');
  const html = await page.text();
  expect(html, 'nothing loads from the unhashed build folder').not.toContain('/pkg/');
  const assets = [...new Set([...html.matchAll(/"(\/assets\/[^"]+)"/g)].map((m) => m[1]))];
  expect(assets.map((a) => a.replace(/\.[0-9a-f]{16}\./, '.HASH.')).sort()).toEqual([
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
  for (const asset of assets.filter((a) => a.includes('countersign_web'))) {
    expect(loaderText, `${loader} loads ${asset}`).toContain(asset);
  }
  test.info().annotations.push({ type: 'first load (brotli, wasm + JS + CSS)', description: `${wire} bytes` });
  console.log(`first load on the wire (brotli): ${(wire / 1024).toFixed(1)} KiB`);

  // An address the build never made: a 404, never the page.
  const missing = await request.get('/assets/app.ffffffffffffffff.js');
  expect(missing.status()).toBe(404);
});
