// Loads the wasm bundle (wasm-bindgen's glue and module). Kept as a file, not
// an inline <script>, because the server's CSP forbids inline scripts.
// `cargo xtask web` rewrites both addresses to the hashed names it serves.
import init from '/pkg/countersign_web.js';

init({ module_or_path: '/pkg/countersign_web_bg.wasm' });
