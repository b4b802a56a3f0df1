// Loads the wasm bundle built into /pkg by `cargo xtask`. Kept as a file, not
// an inline <script>, because the server's CSP forbids inline scripts.
import init from '/pkg/countersign_web.js';

init();
