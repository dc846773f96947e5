"""The plain client: one call opens, plans, and waits for alice if something blocks.

CONSOLE_API_KEY=... python client/examples/quickstart.py   (key from `make run`)
"""

from console_client import Console

with Console() as console:  # CONSOLE_URL (default http://127.0.0.1:8000), CONSOLE_API_KEY
    values = {"recipient_account": "DE89 3704 0044 0532 0130 00", "amount": 120, "memo": "rent"}
    pending = console.resolve("payments.transfer", "alice", values, wait=False)
    if pending.awaiting_user:
        print(f"alice (password alice-demo-pass) answers at {pending.url}")
    resolution = console.wait(pending.instance_id, timeout=600)
    if resolution.ready:
        print("send with", resolution.verified_bindings())  # digest checked
    else:
        print("rejected:", resolution.reason)
