// Loaded with `node --import`: a server that listens on a bare port (a
// number, or a numeric string as from `process.env.PORT`) listens on
// 127.0.0.1 only. server-everything has no host option.
import net from "node:net";

const isPort = (v) =>
  typeof v === "number" || (typeof v === "string" && /^\d+$/.test(v));

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (isPort(args[0]) && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  } else if (
    args[0] !== null &&
    typeof args[0] === "object" &&
    args[0].port !== undefined &&
    args[0].host === undefined &&
    args[0].path === undefined
  ) {
    args[0] = { ...args[0], host: "127.0.0.1" };
  }
  return listen.apply(this, args);
};
