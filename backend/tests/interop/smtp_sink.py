"""A local SMTP sink for the second-approval tests (aiosmtpd, PyPI).

Usage: smtp_sink.py [PORT [LOG]]. Listens on 127.0.0.1 at PORT (a free
one when absent or 0), prints {"ready": port} once it accepts
connections, then one JSON line per message received, appended to LOG
when given, else on standard output: {"from": ..., "to": [...], "data": "<the
whole message>"}. Runs until killed.
"""

import json
import socket
import sys
import time

from aiosmtpd.controller import Controller


class Sink:
    def __init__(self, log):
        self.log = log

    async def handle_DATA(self, server, session, envelope):
        line = json.dumps(
            {
                "from": envelope.mail_from,
                "to": envelope.rcpt_tos,
                "data": envelope.content.decode("utf-8", "replace"),
            }
        )
        if not self.log:
            print(line, flush=True)
        if self.log:
            with open(self.log, "a", encoding="utf-8") as f:
                f.write(line + "\n")
        return "250 Message accepted"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] != "0" else free_port()
    log = sys.argv[2] if len(sys.argv) > 2 else None
    controller = Controller(Sink(log), hostname="127.0.0.1", port=port)
    controller.start()
    print(json.dumps({"ready": port}), flush=True)
    try:
        while True:
            time.sleep(3600)
    finally:
        controller.stop()


if __name__ == "__main__":
    sys.exit(main())
