// Browser tests run against a Countersign server someone else started
// (`cargo xtask` does it): this file starts nothing.
import { defineConfig } from '@playwright/test';

const baseURL = process.env.COUNTERSIGN_E2E_BASE_URL;
if (!baseURL) {
  throw new Error(
    'COUNTERSIGN_E2E_BASE_URL is not set: point it at a running Countersign server, e.g. http://127.0.0.1:8080',
  );
}

export default defineConfig({
  testDir: './tests',
  outputDir: 'test-results',
  workers: 1,
  retries: 0,
  fullyParallel: false,
  forbidOnly: !!process.env.CI,
  reporter: 'list',
  timeout: 30_000,
  expect: { timeout: 10_000 },
  use: {
    baseURL,
    headless: true,
    trace: 'retain-on-failure',
    screenshot: 'only-on-failure',
    launchOptions: {
      // The Debian package: test tools may not download browsers here.
      executablePath: '/usr/bin/chromium',
      // Without the networking flags Chromium keeps dialling out to a closed
      // network; Playwright gives each launch a fresh profile by itself.
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
  },
});
